import { AgentServerBench } from '../support/agent-server.js';
import { assertNoFailures, load, percentile, type LoadResult } from '../support/measure.js';
import { atLeast, atMost, type BenchRow } from '../support/report.js';
import type { BenchStack } from '../support/stack.js';
import type { BenchOptions } from './options.js';

/** Runs at once: the worker loops of one process (N_JOBS_PER_WORKER's default) on both servers. */
const CONNECTIONS = 10;
const WAIT_BODY = JSON.stringify({ assistant_id: 'agent', input: { n: 1 } });

/**
 * The agent server (bench/support/agent-server.ts): stateless `POST /runs/wait` (what
 * `client.runs.wait(null, …)` sends) at 10 connections through the deployment URL (the serving
 * proxy, key checked) against the same graph on upstream's in-memory server; the serving proxy
 * against calling the instance directly; the instance tracing every run into the deployment's
 * project (through a trace front, as deployed) against the same instance without tracing; and
 * `GET /threads/{id}` at the large record count against the small one (threads with a run each,
 * on the instance directly).
 */
export async function agentServerScenario(stack: BenchStack, o: BenchOptions): Promise<BenchRow[]> {
  const bench = new AgentServerBench(stack);
  try {
    await bench.start();
    const wait = (url: string, headers: Record<string, string> = {}) =>
      load({
        url: `${url}/runs/wait`,
        method: 'POST',
        headers,
        body: () => WAIT_BODY,
        connections: CONNECTIONS,
        durationSec: o.durationSec,
        warmupSec: o.warmupSec,
        ...(o.agentWaits ? { amount: o.agentWaits } : {}),
      });
    const upstream = await wait(bench.upstream.url);
    const viaUrl = await wait(bench.proxyUrl, { 'x-api-key': stack.key });
    const direct = await wait(bench.host.url);
    const traced = await wait(bench.traced.url);
    assertNoFailures({
      'runs.wait (upstream)': upstream,
      'runs.wait (deployment URL)': viaUrl,
      'runs.wait (instance)': direct,
      'runs.wait (traced)': traced,
    });
    // Tracing really was on: the client sends in the background, so the runs arrive shortly after.
    for (const deadline = Date.now() + 30_000; (await bench.tracedRuns()) === 0; ) {
      if (Date.now() > deadline) throw new Error('the traced instance sent no run to its trace front within 30 s');
      await new Promise((r) => setTimeout(r, 250));
    }

    const [small, large] = o.agentRecords;
    // Unmeasured reads first at each size: the first ones after the runs.wait load pay for cold
    // code paths and caches, which would land on the small size only.
    const WARMUP = 100;
    const reads = async (ids: string[]) => {
      const samples: number[] = [];
      for (let i = 0; i < o.agentReads + WARMUP; i++) {
        const id = ids[Math.floor(Math.random() * ids.length)];
        const t = process.hrtime.bigint();
        const res = await fetch(`${bench.host.url}/threads/${id}`);
        if (res.status !== 200) throw new Error(`GET /threads/${id} → ${res.status} ${await res.text()}`);
        await res.arrayBuffer();
        if (i >= WARMUP) samples.push(Number(process.hrtime.bigint() - t) / 1e6);
      }
      return percentile(samples, 95);
    };
    const first = await bench.seedThreads(small);
    const atSmall = await reads(first);
    const all = [...first, ...(await bench.seedThreads(large - small))];
    const atLarge = await reads(all);

    const urlVsUpstream = 'agent server: runs.wait, URL vs upstream in-memory';
    const proxyVsInstance = 'agent server: runs.wait, URL vs instance';
    return [
      atLeast(urlVsUpstream, 'throughput', viaUrl.reqPerSec, upstream.reqPerSec, 0.5),
      atMost(urlVsUpstream, 'p99', viaUrl.p99, upstream.p99, 3),
      {
        scenario: urlVsUpstream,
        metric: 'p50',
        value: viaUrl.p50,
        unit: 'ms',
        baseline: upstream.p50,
        ratio: viaUrl.p50 / upstream.p50,
      },
      atLeast(proxyVsInstance, 'throughput', viaUrl.reqPerSec, direct.reqPerSec, 0.8),
      atMost(proxyVsInstance, 'p99', viaUrl.p99, direct.p99, 1.5),
      {
        scenario: proxyVsInstance,
        metric: 'p50',
        value: viaUrl.p50,
        unit: 'ms',
        baseline: direct.p50,
        ratio: viaUrl.p50 / direct.p50,
      },
      atMost('agent server: GET /threads/{id}', `p95 ${large} vs ${small} threads`, atLarge, atSmall, 1.5),
      atMost('agent server: runs.wait, traced vs not', 'p50', traced.p50, direct.p50, 1.1),
      {
        scenario: 'agent server: runs.wait, traced vs not',
        metric: 'throughput',
        value: traced.reqPerSec,
        unit: 'req/s',
        baseline: direct.reqPerSec,
        ratio: traced.reqPerSec / direct.reqPerSec,
      },
    ];
  } finally {
    await bench.close();
  }
}
