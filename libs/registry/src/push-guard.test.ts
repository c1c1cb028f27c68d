import { describe, expect, it } from 'vitest';
import { PushLedger, uploadRequest } from './push-guard.js';

const repo = '0b0e7f2c-3f0a-4c57-9a7e-2f4d3c1b5a69/web';

describe('uploadRequest', () => {
  it('names the requests that bring bytes, and nothing else', () => {
    expect(uploadRequest('POST', `/v2/${repo}/blobs/uploads/`)).toEqual({ kind: 'start', repository: repo, uuid: null });
    expect(uploadRequest('PATCH', `/v2/${repo}/blobs/uploads/abc`)).toEqual({ kind: 'chunk', repository: repo, uuid: 'abc' });
    expect(uploadRequest('PUT', `/v2/${repo}/blobs/uploads/abc`)).toEqual({ kind: 'finish', repository: repo, uuid: 'abc' });
    expect(uploadRequest('PUT', `/v2/${repo}/manifests/v1`)).toEqual({ kind: 'manifest', repository: repo, uuid: null });
    for (const [method, path] of [
      ['GET', `/v2/${repo}/blobs/uploads/abc`],
      ['DELETE', `/v2/${repo}/blobs/uploads/abc`],
      ['GET', `/v2/${repo}/manifests/v1`],
      ['HEAD', `/v2/${repo}/blobs/sha256:00`],
      ['GET', '/v2/'],
    ] as const) {
      expect(uploadRequest(method, path)).toBeNull();
    }
  });
});

describe('PushLedger', () => {
  it('counts streaming bytes, unfinished uploads and finished blobs until their events are recorded, per workspace', () => {
    const ledger = new PushLedger();
    ledger.stream('a', 100);
    ledger.setSession('u1', 'a', 50);
    ledger.finished('a', 'sha256:1', 30);
    ledger.setSession('u2', 'b', 7);
    expect(ledger.pending('a')).toBe(180);
    expect(ledger.pending('b')).toBe(7);
    ledger.stream('a', -100);
    ledger.dropSession('u1');
    expect(ledger.recentDigests('a')).toEqual(['sha256:1']);
    ledger.recorded('a', ['sha256:1']);
    expect(ledger.pending('a')).toBe(0);
  });

  it('forgets an upload idle for an hour', () => {
    const ledger = new PushLedger();
    ledger.setSession('u1', 'a', 50);
    expect(ledger.pending('a', Date.now() + 61 * 60_000)).toBe(0);
  });
});
