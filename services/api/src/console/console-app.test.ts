import { loadConfig } from '@slipway/config';
import { describe, expect, it } from 'vitest';
import { consoleCsp } from './console-app.js';

const config = (env: Record<string, string>) => loadConfig({ NODE_ENV: 'test', SLIPWAY_SECRETS_KEY: Buffer.alloc(32, 1).toString('base64'), ...env });
const directives = (csp: string) => Object.fromEntries(csp.split('; ').map((d) => [d.split(' ')[0], d.split(' ').slice(1).join(' ')]));

describe('consoleCsp', () => {
  it('keeps everything its own, and lets the page call where deployments are served at the edge', () => {
    const csp = directives(consoleCsp(config({ SLIPWAY_APPS_DOMAIN: 'apps.example.com', SLIPWAY_EDGE_HTTP_PORT: '80' })));
    expect(csp).toEqual({
      'default-src': "'none'",
      'script-src': "'self'",
      'style-src': "'self'",
      'img-src': "'self'",
      'connect-src': "'self' http://*.apps.example.com",
      'font-src': "'self'",
      'manifest-src': "'self'",
      'base-uri': "'none'",
      'form-action': "'none'",
      'frame-ancestors': "'none'",
      'object-src': "'none'",
    });
  });

  it('follows the edge’s scheme and port, and with the edge off allows any port of the runtime host only', () => {
    expect(directives(consoleCsp(config({})))['connect-src']).toBe("'self' http://*.localhost:8180");
    const tls = { SLIPWAY_TLS_CERT_FILE: '/etc/cert.pem', SLIPWAY_TLS_KEY_FILE: '/etc/key.pem', SLIPWAY_APPS_DOMAIN: 'apps.example.com' };
    expect(directives(consoleCsp(config(tls)))['connect-src']).toBe("'self' https://*.apps.example.com:8443");
    expect(directives(consoleCsp(config({ SLIPWAY_EDGE_HTTP_PORT: 'off', SLIPWAY_RUNTIME_HOST: '10.1.2.3' })))['connect-src']).toBe("'self' http://10.1.2.3:*");
    expect(consoleCsp(config({}))).not.toMatch(/unsafe|connect-src[^;]*\*(?!\.)/);
  });
});
