import { PassThrough } from 'node:stream';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { readBodyBytes } from './body.js';
import { DEFAULT_INGEST_LIMITS } from './limits.js';

const GZIP = { 'content-encoding': 'gzip' };

describe('readBodyBytes', () => {
  it('inflates a gzip body', async () => {
    const body = new PassThrough();
    body.end(gzipSync(Buffer.from('{"post":[]}')));
    expect((await readBodyBytes(body, GZIP, DEFAULT_INGEST_LIMITS)).toString()).toBe('{"post":[]}');
  });

  it('ends with an error when a gzip body is cut off by its client, instead of waiting forever', async () => {
    const body = new PassThrough();
    const whole = gzipSync(Buffer.from('x'.repeat(100_000)));
    body.write(whole.subarray(0, whole.length / 2));
    const reading = readBodyBytes(body, GZIP, DEFAULT_INGEST_LIMITS);
    // What Node does to a request whose client went away.
    setTimeout(() => body.destroy(new Error('aborted')), 20);
    await expect(reading).rejects.toThrow();
  });

  it('ends with an error when a plain body is cut off', async () => {
    const body = new PassThrough();
    body.write('{"post":');
    const reading = readBodyBytes(body, {}, DEFAULT_INGEST_LIMITS);
    setTimeout(() => body.destroy(new Error('aborted')), 20);
    await expect(reading).rejects.toThrow('aborted');
  });
});
