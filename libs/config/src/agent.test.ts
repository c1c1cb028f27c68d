import { describe, expect, it } from 'vitest';
import { loadAgentConfig } from './agent.js';
import { ConfigError } from './config-error.js';

const valid = {
  SLIPWAY_API_URL: 'https://slipway.example.com/',
  SLIPWAY_LISTENER_ID: '6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b',
  SLIPWAY_API_KEY: 'slw_listener_key_0123456789abcdef',
};

describe('loadAgentConfig', () => {
  it('reads the control plane, listener and key; defaults the rest; no kubeconfig means in-cluster', () => {
    const config = loadAgentConfig(valid);
    expect(config).toEqual({
      apiUrl: 'https://slipway.example.com',
      listenerId: valid.SLIPWAY_LISTENER_ID,
      apiKey: valid.SLIPWAY_API_KEY,
      kubeconfigPath: null,
      pollIntervalMs: 5000,
      maxBackoffMs: 60_000,
      requestTimeoutMs: 10_000,
      logLevel: 'info',
      shutdownTimeoutMs: 10_000,
    });
    expect(Object.isFrozen(config)).toBe(true);
    expect(
      loadAgentConfig({ ...valid, KUBECONFIG: '/etc/kube/config', SLIPWAY_AGENT_POLL_INTERVAL_MS: '' }).kubeconfigPath,
    ).toBe('/etc/kube/config');
  });

  it('lists every bad key at once', () => {
    let error: unknown;
    try {
      loadAgentConfig({
        SLIPWAY_API_URL: 'ftp://x',
        SLIPWAY_LISTENER_ID: 'not-a-uuid',
        SLIPWAY_AGENT_POLL_INTERVAL_MS: '5',
      });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const problems = (error as ConfigError).problems.join('\n');
    for (const key of ['SLIPWAY_API_URL', 'SLIPWAY_LISTENER_ID', 'SLIPWAY_API_KEY', 'SLIPWAY_AGENT_POLL_INTERVAL_MS'])
      expect(problems).toContain(key);
  });

  it('refuses a plain http URL off loopback unless SLIPWAY_AGENT_ALLOW_INSECURE_HTTP is true', () => {
    const refused = (url: string, extra: Record<string, string> = {}) => {
      try {
        loadAgentConfig({ ...valid, SLIPWAY_API_URL: url, ...extra });
        return null;
      } catch (err) {
        expect(err).toBeInstanceOf(ConfigError);
        return (err as ConfigError).problems.join('\n');
      }
    };
    expect(refused('http://slipway.example.com')).toMatch(/SLIPWAY_API_URL.*https.*SLIPWAY_AGENT_ALLOW_INSECURE_HTTP/);
    expect(refused('http://10.0.0.5:8124')).toMatch(/https/);
    expect(refused('http://slipway.example.com', { SLIPWAY_AGENT_ALLOW_INSECURE_HTTP: 'false' })).toMatch(/https/);
    // Loopback never leaves the machine (or the pod): always allowed, like https.
    for (const url of [
      'http://127.0.0.1:8124',
      'http://127.9.8.7',
      'http://localhost:8124/',
      'http://[::1]:8124',
      'https://slipway.example.com',
    ]) {
      expect(refused(url), url).toBeNull();
    }
    expect(refused('http://127.0.0.1.example.com')).toMatch(/https/);
    expect(refused('http://slipway.example.com', { SLIPWAY_AGENT_ALLOW_INSECURE_HTTP: 'true' })).toBeNull();
  });
});
