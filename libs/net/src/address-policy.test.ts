import { describe, expect, it } from 'vitest';
import { addressRefusal, hostAllowed } from './address-policy.js';

const none = { allowHosts: [] };

describe('addressRefusal', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['10.1.2.3', 'private'],
    ['172.20.0.1', 'private'],
    ['192.168.1.1', 'private'],
    ['169.254.169.254', 'link-local'],
    ['100.100.0.1', 'carrier-grade NAT'],
    ['0.0.0.0', 'unspecified'],
    ['224.0.0.1', 'multicast'],
    ['255.255.255.255', 'reserved or broadcast'],
    ['::1', 'loopback'],
    ['::', 'unspecified'],
    ['fd12:3456::1', 'unique-local'],
    ['fe80::1', 'link-local'],
    ['ff02::1', 'multicast'],
    ['::ffff:127.0.0.1', 'IPv4-mapped'],
    ['::ffff:8.8.8.8', 'IPv4-mapped'],
    ['[::1]', 'loopback'],
  ])('refuses %s as %s', (address, name) => {
    expect(addressRefusal(address, none)).toContain(name);
  });

  it.each(['8.8.8.8', '1.1.1.1', '140.82.112.3', '2606:4700:4700::1111', '2a00:1450:4001:80b::200e'])(
    'allows the public address %s',
    (address) => {
      expect(addressRefusal(address, none)).toBeNull();
    },
  );

  it('allows addresses inside allow-listed IPs and ranges only', () => {
    const policy = { allowHosts: ['127.0.0.1', '10.0.0.0/8', 'fd00::/8', 'gitea.internal'] };
    expect(addressRefusal('127.0.0.1', policy)).toBeNull();
    expect(addressRefusal('127.0.0.2', policy)).toContain('loopback');
    expect(addressRefusal('10.9.9.9', policy)).toBeNull();
    expect(addressRefusal('fd00::5', policy)).toBeNull();
    expect(addressRefusal('192.168.0.1', policy)).toContain('private');
  });
});

describe('hostAllowed', () => {
  const policy = { allowHosts: ['Gitea.Internal', '127.0.0.1', '10.0.0.0/8', '::1'] };
  it('matches names exactly and case-insensitively, addresses by IP or range', () => {
    expect(hostAllowed('gitea.internal', policy)).toBe(true);
    expect(hostAllowed('gitea.internal.', policy)).toBe(true);
    expect(hostAllowed('evil.gitea.internal', policy)).toBe(false);
    expect(hostAllowed('127.0.0.1', policy)).toBe(true);
    expect(hostAllowed('10.3.2.1', policy)).toBe(true);
    expect(hostAllowed('[::1]', policy)).toBe(true);
    expect(hostAllowed('127.0.0.2', policy)).toBe(false);
    expect(hostAllowed('localhost', policy)).toBe(false);
  });
});
