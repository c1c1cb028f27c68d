import { Writable } from 'node:stream';
import type { SecretsCodec } from '@slipway/crypto';
import { createDataSource, EdgeCertificateRepository } from '@slipway/db';
import { createLogger } from '@slipway/logging';
import { describe, expect, it } from 'vitest';
import { CertificateKeeper } from './certificate-keeper.js';

describe('CertificateKeeper.sniCallback', () => {
  it('reads no certificate for a name the edge does not serve; a served one is looked up', async () => {
    // A repository whose database was never opened: any read of it fails, and the callback logs that.
    const repo = new EdgeCertificateRepository(createDataSource({ url: 'postgres://127.0.0.1:1/none' }).manager);
    const lines: string[] = [];
    const destination = new Writable({
      write(chunk, _encoding, done) {
        lines.push(chunk.toString());
        done();
      },
    });
    const keeper = new CertificateKeeper({
      wanted: async () => [],
      issuer: { issue: () => Promise.reject(new Error('not here')) },
      repo,
      codec: {} as SecretsCodec,
      log: createLogger({ name: 'keeper-test', level: 'warn', destination }),
    });
    const served = (name: string) => name === 'shop.apps.example.com';
    const callback = keeper.sniCallback(served);
    const ask = (name: string) => new Promise((resolve) => callback(name, (err, ctx) => resolve({ err, ctx })));

    expect(await ask('random-123.example.com')).toEqual({ err: null, ctx: undefined });
    expect(await ask('Random-123.Example.com.')).toEqual({ err: null, ctx: undefined });
    expect(lines).toEqual([]);
    expect(await ask('shop.apps.example.com')).toEqual({ err: null, ctx: undefined });
    await new Promise((r) => setImmediate(r));
    expect(lines.join('')).toContain('reading a certificate failed');
  });
});
