import autocannon from 'autocannon';

/** One load measurement: throughput and latency percentiles (ms). */
export interface LoadResult {
  reqPerSec: number;
  p50: number;
  p99: number;
  /** Responses outside 2xx, socket errors and timeouts; a correct run has none. */
  errors: number;
  /** What the first few of those were (status and body, or the socket error), to say why. */
  failures: string[];
  requests: number;
}

const FAILURES_KEPT = 5;

export interface LoadSpec {
  url: string;
  method?: 'GET' | 'POST' | 'PATCH';
  headers?: Record<string, string>;
  /** A fresh body per request (e.g. unique names), or a fixed one. */
  body?: () => string;
  connections: number;
  durationSec: number;
  /** Stop after this many requests instead of after `durationSec`. */
  amount?: number;
  /** Seconds of the same load first, not measured (JIT, pools, plans). */
  warmupSec?: number;
  /**
   * An https `url`'s TLS server name (SNI), when the url names an address (the Host goes in
   * `headers`). autocannon never checks the server's certificate (it connects with
   * `rejectUnauthorized: false` whatever it is given): the bench's are self-signed, and checked
   * once apart (serving.ts).
   */
  servername?: string;
}

function run(spec: LoadSpec, durationSec: number): Promise<LoadResult> {
  const failures: string[] = [];
  const keep = (failure: string) => void (failures.length < FAILURES_KEPT && failures.push(failure));
  return new Promise((resolve, reject) => {
    const instance = autocannon(
      {
        url: spec.url,
        ...(spec.servername ? { servername: spec.servername } : {}),
        connections: spec.connections,
        // A request is measured however long it takes (a shared, loaded machine); autocannon's
        // default of 10 s would count a slow answer as an error.
        timeout: 60,
        ...(spec.amount ? { amount: spec.amount } : { duration: durationSec }),
        method: spec.method ?? 'GET',
        headers: { ...(spec.body ? { 'content-type': 'application/json' } : {}), ...spec.headers },
        requests: [
          {
            setupRequest: (req) => (spec.body ? { ...req, body: spec.body() } : req),
            onResponse: (status, body) => {
              if (status >= 400) keep(`HTTP ${status}: ${String(body).slice(0, 300)}`);
            },
          },
        ],
      },
      (err, result) => {
        if (err) return reject(err);
        resolve({
          reqPerSec: result.requests.average,
          p50: result.latency.p50,
          p99: result.latency.p99,
          // A 304 is the answer a conditional poll expects; 1xx and 3xx otherwise never come.
          // autocannon counts a timeout among its errors as well as on its own.
          errors: result['4xx'] + result['5xx'] + result.errors,
          failures,
          requests: result.requests.total,
        });
      },
    );
    instance.on('reqError', (err: Error) => keep(`request failed: ${err.message}`));
  });
}

/**
 * Throws, saying what failed, when any request of the named loads failed; with `serverProblems`
 * (the serving process's warnings and errors, `BenchProcess.problems`), those too: where a 500's
 * cause is.
 */
export function assertNoFailures(loads: Record<string, LoadResult>, serverProblems?: string): void {
  const failed = Object.entries(loads).filter(([, r]) => r.errors);
  if (!failed.length) return;
  const said = failed.map(
    ([name, r]) => `${name}: ${r.errors} of ${r.requests} requests failed:\n  ${r.failures.join('\n  ')}`,
  );
  if (serverProblems !== undefined) said.push(`its last warnings and errors:\n${serverProblems || '(none)'}`);
  throw new Error(said.join('\n'));
}

/**
 * Warm up, then measure, with autocannon from this process. A timed load that ended before any
 * answer came (a second's load on a saturated machine, as the smoke run's) is measured again
 * until each connection has had one: a rate, where there was none to divide by.
 */
export async function load(spec: LoadSpec): Promise<LoadResult> {
  if (spec.warmupSec) await run(spec, spec.warmupSec);
  const measured = await run(spec, spec.durationSec);
  if (measured.reqPerSec > 0 || spec.amount) return measured;
  return run({ ...spec, amount: spec.connections }, spec.durationSec);
}

/** Percentile of samples (ms), nearest rank. */
export function percentile(samples: number[], p: number): number {
  if (!samples.length) return Number.NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

/**
 * Wall-time percentiles (ms) of each of `fns` over `runs` timed calls each, after a few unmeasured
 * calls of each. The calls alternate (a, b, a, b, …) so a noisy spell on a shared machine lands on
 * every side alike instead of on whichever was being timed then.
 */
export async function timeInterleaved(
  fns: Array<() => Promise<unknown>>,
  runs: number,
): Promise<Array<{ p50: number; p99: number }>> {
  for (const fn of fns) for (let i = 0; i < 3; i++) await fn();
  const samples: number[][] = fns.map(() => []);
  for (let i = 0; i < runs; i++) {
    for (const [k, fn] of fns.entries()) {
      const t = process.hrtime.bigint();
      await fn();
      samples[k]!.push(Number(process.hrtime.bigint() - t) / 1e6);
    }
  }
  return samples.map((s) => ({ p50: percentile(s, 50), p99: percentile(s, 99) }));
}
