import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { clientReader } from './client-of.js';

const req = (peer: string, headers: Record<string, string> = {}) =>
  ({ socket: { remoteAddress: peer }, connection: { remoteAddress: peer }, headers }) as unknown as IncomingMessage;

describe('clientReader (SLIPWAY_EDGE_TRUST_PROXY)', () => {
  it('as the front door (false), believes no forwarding header: the peer is the client', () => {
    const read = clientReader(false, 'https');
    expect(read(req('203.0.113.7', { 'x-forwarded-for': '1.2.3.4', 'x-forwarded-proto': 'http' }))).toEqual({
      address: '203.0.113.7',
      proto: 'https',
      forwardedFor: '203.0.113.7',
    });
  });

  it('behind a trusted proxy, takes the client from X-Forwarded-For and the scheme it names, keeping the chain', () => {
    const read = clientReader('10.0.0.0/8', 'http');
    expect(read(req('10.1.2.3', { 'x-forwarded-for': '198.51.100.9', 'x-forwarded-proto': 'https' }))).toEqual({
      address: '198.51.100.9',
      proto: 'https',
      forwardedFor: '198.51.100.9, 10.1.2.3',
    });
    // A forged entry before the real client stays in the chain but is not believed: only trusted hops are skipped.
    expect(read(req('10.1.2.3', { 'x-forwarded-for': '6.6.6.6, 198.51.100.9' })).address).toBe('198.51.100.9');
  });

  it('a peer outside the trusted list is the client, whatever it claims', () => {
    const read = clientReader('10.0.0.0/8', 'http');
    expect(read(req('203.0.113.7', { 'x-forwarded-for': '1.2.3.4', 'x-forwarded-proto': 'https' }))).toEqual({
      address: '203.0.113.7',
      proto: 'http',
      forwardedFor: '203.0.113.7',
    });
  });

  it('a hop count believes that many proxies', () => {
    expect(clientReader(1, 'http')(req('10.0.0.1', { 'x-forwarded-for': '6.6.6.6, 198.51.100.9' })).address).toBe(
      '198.51.100.9',
    );
    expect(clientReader(2, 'http')(req('10.0.0.1', { 'x-forwarded-for': '6.6.6.6, 198.51.100.9' })).address).toBe(
      '6.6.6.6',
    );
  });
});
