import { describe, expect, it } from 'vitest';
import { DENIED_RANGES, egressRules } from './egress-rules.js';
import { resolversOf } from './dns-relay.js';
import { parsePool, pickSlot, slotAddresses, slotOf, slotOfName } from './pool.js';

describe('the sandbox address pool', () => {
  it('normalises the CIDR, keeps slot 0 for the host and derives names from each /30', () => {
    const pool = parsePool('10.213.7.9/16');
    expect(pool).toMatchObject({ cidr: '10.213.0.0/16', slots: 16384, servicesAddress: '10.213.0.1' });
    expect(slotAddresses(pool, 1)).toEqual({
      address: '10.213.0.6',
      gateway: '10.213.0.5',
      name: 'slipway-0ad50004',
      hostLink: 'slw0ad50004',
      peerLink: 'slp0ad50004',
    });
    expect(slotAddresses(pool, 16383).address).toBe('10.213.255.254');
    expect(() => slotAddresses(pool, 0)).toThrow();
    expect(() => slotAddresses(pool, 16384)).toThrow();
    expect(slotOf(pool, '10.213.255.254')).toBe(16383);
    expect(slotOf(pool, '10.213.0.2')).toBeNull();
    expect(slotOf(pool, '10.213.0.5')).toBeNull();
    expect(slotOf(pool, '10.214.0.6')).toBeNull();
    expect(slotOfName(pool, 'slipway-0ad50004')).toBe(1);
    expect(slotOfName(parsePool('10.214.0.0/16'), 'slipway-0ad50004')).toBeNull();
  });

  it('refuses pools without a sandbox slot or that are not IPv4 CIDRs', () => {
    for (const bad of ['10.0.0.0/30', '10.0.0.0/7', 'fd00::/64', '10.0.0/16', '10.0.0.0/16/2'])
      expect(() => parsePool(bad)).toThrow();
  });

  it('picks a free slot, never the host one, and says when none is left', () => {
    const pool = parsePool('10.1.0.0/28');
    expect(pool.slots).toBe(4);
    expect(pickSlot(pool, new Set([1, 2]), 1)).toBe(3);
    expect(pickSlot(pool, new Set([3]), 3)).toBe(1);
    expect(pickSlot(pool, new Set([1, 2, 3]))).toBeNull();
  });
});

describe('the egress rules', () => {
  const rules = egressRules(parsePool('10.213.0.0/16'), {
    allowCidrs: ['192.168.5.0/24'],
    storeAddresses: ['172.18.0.3'],
  });
  const forward = rules.split('\n').filter((l) => l.includes('fwd_0ad50000_16'));

  it('drops the stores first, then accepts the allow-list, then drops the private ranges, then accepts the rest', () => {
    const at = (needle: string) => forward.findIndex((l) => l.includes(needle));
    expect(rules).toContain('add element inet slipway_sandbox stores_0ad50000_16 { 172.18.0.3 }');
    expect(rules).toContain('add element inet slipway_sandbox allow_0ad50000_16 { 192.168.5.0/24 }');
    expect(at('@stores_0ad50000_16 drop')).toBeGreaterThan(0);
    expect(at('@allow_0ad50000_16 accept')).toBeGreaterThan(at('@stores_0ad50000_16 drop'));
    expect(at(`{ ${DENIED_RANGES.join(', ')} } drop`)).toBeGreaterThan(at('@allow_0ad50000_16 accept'));
    expect(at('meta nfproto ipv4 accept')).toBeGreaterThan(at(`{ ${DENIED_RANGES.join(', ')} } drop`));
    expect(forward.at(-1)).toContain('ip saddr 10.213.0.0/16 drop');
    for (const range of [
      '10.0.0.0/8',
      '172.16.0.0/12',
      '192.168.0.0/16',
      '100.64.0.0/10',
      '169.254.0.0/16',
      '127.0.0.0/8',
    ])
      expect(DENIED_RANGES).toContain(range);
  });

  it('lets a sandbox into the host only for its fronts and DNS, and nothing new into a sandbox', () => {
    const input = rules.split('\n').filter((l) => l.includes('in_0ad50000_16') && l.startsWith('add rule'));
    expect(input.map((l) => l.replace(/^add rule inet slipway_sandbox in_0ad50000_16 /, ''))).toEqual([
      'iif lo accept',
      'iifname "slw*" meta nfproto ipv6 drop',
      'ip saddr 10.213.0.0/16 fib saddr . iif oif missing drop',
      'ip saddr 10.213.0.0/16 ct state established,related accept',
      'ip saddr 10.213.0.0/16 ip daddr 10.213.0.1 ip saddr . tcp dport @fronts_0ad50000_16 accept',
      'ip saddr 10.213.0.0/16 ip daddr 10.213.0.0/16 meta l4proto { tcp, udp } th dport 53 accept',
      'ip saddr 10.213.0.0/16 drop',
    ]);
    expect(forward).toContain('add rule inet slipway_sandbox fwd_0ad50000_16 ip daddr 10.213.0.0/16 drop');
    expect(forward).toContain('add rule inet slipway_sandbox fwd_0ad50000_16 iifname "slw*" meta nfproto ipv6 drop');
    expect(rules).toContain(
      'add rule inet slipway_sandbox nat_0ad50000_16 ip saddr 10.213.0.0/16 ip daddr != 10.213.0.0/16 masquerade',
    );
  });

  it('leaves out empty config-derived sets', () => {
    const bare = egressRules(parsePool('10.9.0.0/16'), { allowCidrs: [], storeAddresses: [] });
    expect(bare).not.toContain('add element');
  });
});

describe('resolversOf', () => {
  it('reads the nameserver lines, and falls back to loopback', () => {
    expect(
      resolversOf('# x\nsearch example\nnameserver 10.255.255.53\nnameserver fe80::1%eth0\nnameserver bogus\n'),
    ).toEqual(['10.255.255.53', 'fe80::1']);
    expect(resolversOf('')).toEqual(['127.0.0.1']);
  });
});
