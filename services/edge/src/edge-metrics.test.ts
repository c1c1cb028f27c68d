import type { CertificateSummary } from '@slipway/db';
import { describe, expect, it } from 'vitest';
import { EdgeMetrics } from './edge-metrics.js';

const EXPIRY = 'slipway_edge_certificate_expiry_timestamp_seconds';
const FAILURES = 'slipway_edge_certificate_failures';

function series(text: string, name: string): string[] {
  return text.split('\n').filter((line) => line.startsWith(`${name}{`));
}

describe('EdgeMetrics certificates', () => {
  it('reads the certificates once per scrape for both gauges, and afresh at the next scrape', async () => {
    let reads = 0;
    let rows: CertificateSummary[] = [{ host: 'a.example.com', notAfter: new Date(2_000_000_000_000), failures: 0 }];
    const metrics = new EdgeMetrics(
      () => 0,
      async () => {
        reads++;
        await new Promise((resolve) => setTimeout(resolve, 5));
        return rows;
      },
    );
    const first = await metrics.registry.metrics();
    expect(reads).toBe(1);
    expect(series(first, EXPIRY)).toEqual([`${EXPIRY}{host="a.example.com",service="edge"} 2000000000`]);
    expect(series(first, FAILURES)).toEqual([`${FAILURES}{host="a.example.com",service="edge"} 0`]);

    rows = [
      { host: 'a.example.com', notAfter: new Date(2_000_000_000_000), failures: 3 },
      { host: '*.apps.example.com', notAfter: null, failures: 1 },
    ];
    const second = await metrics.registry.metrics();
    expect(reads).toBe(2);
    expect(series(second, FAILURES)).toEqual([
      `${FAILURES}{host="a.example.com",service="edge"} 3`,
      `${FAILURES}{host="*.apps.example.com",service="edge"} 1`,
    ]);
    // No certificate yet: no expiry series for that host.
    expect(series(second, EXPIRY)).toEqual([`${EXPIRY}{host="a.example.com",service="edge"} 2000000000`]);
  });

  it('shows no certificate series, and still answers, when the read fails', async () => {
    const metrics = new EdgeMetrics(
      () => 2,
      async () => {
        throw new Error('Postgres away');
      },
    );
    const text = await metrics.registry.metrics();
    expect(series(text, EXPIRY)).toEqual([]);
    expect(series(text, FAILURES)).toEqual([]);
    expect(text).toContain('slipway_edge_routes{service="edge"} 2');
  });
});
