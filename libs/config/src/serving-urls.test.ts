import { loadConfig } from './index.js';
import { describe, expect, it } from 'vitest';
import { ServingUrls } from './serving-urls.js';

const urls = (env: Record<string, string>) =>
  new ServingUrls(
    loadConfig({ NODE_ENV: 'test', SLIPWAY_SECRETS_KEY: Buffer.alloc(32, 1).toString('base64'), ...env }),
  );
const cloud = { source: 'upload' as const, servingPort: 20_123, edgeName: 'my-agent' };

describe('ServingUrls', () => {
  it('names a deployment at the edge: http with the edge port, by default under localhost', () => {
    expect(urls({}).of(cloud)).toBe('http://my-agent.localhost:8180');
    expect(urls({ SLIPWAY_APPS_DOMAIN: 'apps.example.com', SLIPWAY_EDGE_HTTP_PORT: '80' }).of(cloud)).toBe(
      'http://my-agent.apps.example.com',
    );
  });

  it('uses the public port of an outer proxy, left out when it is the scheme’s own', () => {
    expect(urls({ SLIPWAY_APPS_PUBLIC_PORT: '9000' }).of(cloud)).toBe('http://my-agent.localhost:9000');
    expect(urls({ SLIPWAY_APPS_PUBLIC_PORT: '80' }).of(cloud)).toBe('http://my-agent.localhost');
  });

  it('is https on the HTTPS port once the edge has a certificate for the apps domain', () => {
    const tls = {
      SLIPWAY_TLS_CERT_FILE: '/etc/cert.pem',
      SLIPWAY_TLS_KEY_FILE: '/etc/key.pem',
      SLIPWAY_APPS_DOMAIN: 'apps.example.com',
    };
    expect(urls(tls).of(cloud)).toBe('https://my-agent.apps.example.com:8443');
    expect(urls({ ...tls, SLIPWAY_EDGE_HTTPS_PORT: '443' }).of(cloud)).toBe('https://my-agent.apps.example.com');
  });

  it('is https when the edge obtains certificates through ACME, except for localhost names', () => {
    const acme = { SLIPWAY_ACME_DIRECTORY_URL: 'https://acme.example.com/dir', SLIPWAY_EDGE_HTTPS_PORT: '443' };
    expect(urls({ ...acme, SLIPWAY_APPS_DOMAIN: 'apps.example.com' }).of(cloud)).toBe(
      'https://my-agent.apps.example.com',
    );
    expect(urls(acme).of(cloud)).toBe('http://my-agent.localhost:8180');
  });

  it('with the edge off, is the serving port on the runtime host; nothing for self-hosted deployments', () => {
    expect(urls({ SLIPWAY_EDGE_HTTP_PORT: 'off' }).of(cloud)).toBe('http://127.0.0.1:20123');
    expect(urls({ SLIPWAY_EDGE_HTTP_PORT: 'off' }).of({ ...cloud, servingPort: null })).toBeNull();
    expect(urls({}).of({ ...cloud, source: 'external_container' })).toBeNull();
  });

  it('refuses a certificate without its key, and a port that is neither a port nor off', () => {
    expect(() => urls({ SLIPWAY_TLS_CERT_FILE: '/etc/cert.pem' })).toThrow(/SLIPWAY_TLS_KEY_FILE/);
    expect(() => urls({ SLIPWAY_EDGE_HTTP_PORT: 'none' })).toThrow(/SLIPWAY_EDGE_HTTP_PORT/);
  });
});
