/**
 * Experiment (bench/history.md, "What bounds a create at commit"): what bounds concurrent creates
 * at commit. Interleaved rounds of `POST /v2/deployments` at 50 connections against one stack
 * (the packaged build): all in one workspace vs spread over 50 (each request to the next one's
 * key and listener), with the in-transaction notifies (outbox insert and event numbering) and the events' per-workspace
 * numbering lock switched off as experiments. Samples the api's backends' wait events meanwhile.
 *
 *   [LEGS='name|…'] tsx bench/experiments/create-locks.ts [seconds per leg] [rounds]
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { issueApiKey } from '@slipway/db';
import { load } from '../support/measure.js';
import { BenchStack } from '../support/stack.js';
import { installSwitches } from './switches.js';

const seconds = Number(process.argv[2] ?? 4);
const rounds = Number(process.argv[3] ?? 3);
const WORKSPACES = 50;

const stack = new BenchStack();
try {
  await stack.start();
  const ds = stack.dataSource;
  const switches = await installSwitches(ds, stack.dbName);
  // The api's pool connected before: reconnect them so they take the search_path.
  await ds.query(
    `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() ` +
      `AND application_name <> 'slipway-bench' AND pid <> pg_backend_pid()`,
  );
  await new Promise((r) => setTimeout(r, 500));
  // Other workspaces of the bench's organization, each with an admin key and a listener.
  const [{ organization_id: org }] = await ds.query(`SELECT organization_id FROM workspaces LIMIT 1`);
  const others: Array<{ key: string; listener: string }> = [];
  for (let i = 0; i < WORKSPACES; i++) {
    const ws = randomUUID();
    await ds.query(`INSERT INTO workspaces (id, organization_id, name) VALUES ($1, $2, $3)`, [
      ws,
      org,
      `bench-ws-${i}`,
    ]);
    const { key } = await issueApiKey(ds.manager, {
      organizationId: org,
      workspaceId: ws,
      scope: 'workspace',
      role: 'admin',
    });
    const res = await fetch(`${stack.api.url}/v2/listeners`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'content-type': 'application/json' },
      body: JSON.stringify({
        compute_type: 'k8s',
        compute_id: `bench-${i}`,
        compute_config: { k8s_namespaces: ['bench'] },
      }),
    });
    if (!res.ok) throw new Error(`listener: ${res.status} ${await res.text()}`);
    others.push({ key, listener: ((await res.json()) as { id: string }).id });
  }

  let n = 0;
  const tag = randomBytes(2).toString('hex');
  const one = {
    url: `${stack.api.url}/v2/deployments`,
    method: 'POST' as const,
    headers: { 'x-api-key': stack.key },
    connections: 50,
    durationSec: seconds,
    warmupSec: 1,
  };
  const body = () => JSON.stringify(stack.createBody(`c${tag}-${n++}`));
  // Many workspaces: each request goes to the next workspace (its key and its listener).
  let w = 0;
  const autocannonMany = async () => {
    const { default: autocannon } = await import('autocannon');
    const runOnce = (d: number) =>
      new Promise<{ reqPerSec: number; p50: number; p99: number; errors: number }>((resolve, reject) =>
        autocannon(
          {
            url: one.url,
            connections: 50,
            timeout: 60,
            duration: d,
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            requests: [
              {
                setupRequest: (req: any) => {
                  const o = others[w++ % others.length]!;
                  const b = { ...stack.createBody(`m${tag}-${n++}`), source_config: { listener_id: o.listener } };
                  return { ...req, headers: { ...req.headers, 'x-api-key': o.key }, body: JSON.stringify(b) };
                },
              },
            ],
          },
          (err: Error | null, r: any) =>
            err
              ? reject(err)
              : resolve({
                  reqPerSec: r.requests.average,
                  p50: r.latency.p50,
                  p99: r.latency.p99,
                  errors: r['4xx'] + r['5xx'] + r.errors + r.timeouts,
                }),
        ),
      );
    await runOnce(1);
    return runOnce(seconds);
  };

  const wokenMeanwhile = async <T>(run: () => Promise<T>): Promise<T> => {
    const waker = await ds.createQueryRunner();
    await waker.connect();
    await waker.query(`SET synchronous_commit = off`);
    let on = true;
    const loop = (async () => {
      while (on) {
        await waker.query(`SELECT pg_catalog.pg_notify('slipway_outbox', '')`);
        await new Promise((res) => setTimeout(res, 5));
      }
    })();
    try {
      return await run();
    } finally {
      on = false;
      await loop;
      await waker.release();
    }
  };
  type Leg = {
    name: string;
    setup: () => Promise<unknown>;
    run: () => Promise<{ reqPerSec: number; p50: number; p99: number; errors: number }>;
  };
  const { notify, numberingLock: numbering } = switches;
  const legs: Leg[] = [
    {
      name: 'one workspace',
      setup: () => Promise.all([notify(true), numbering(true)]),
      run: () => load({ ...one, body }),
    },
    { name: 'many workspaces', setup: () => Promise.all([notify(true), numbering(true)]), run: autocannonMany },
    {
      name: 'one, no notifies',
      setup: () => Promise.all([notify(false), numbering(true)]),
      run: () => load({ ...one, body }),
    },
    {
      name: 'one, no numbering lock',
      setup: () => Promise.all([notify(true), numbering(false)]),
      run: () => load({ ...one, body }),
    },
    {
      name: 'one, neither',
      setup: () => Promise.all([notify(false), numbering(false)]),
      run: () => load({ ...one, body }),
    },
    // Both locks off, the relay woken as a fix would wake it: after commit, outside the creates'
    // transactions (here every 5 ms from a connection of its own, synchronous_commit off).
    {
      name: 'one, neither, woken after commit',
      setup: () => Promise.all([notify(false), numbering(false)]),
      run: () => wokenMeanwhile(() => load({ ...one, body })),
    },
    { name: 'many, no notifies', setup: () => Promise.all([notify(false), numbering(true)]), run: autocannonMany },
  ];
  // LEGS='name|name…' runs only those (in that order); a pause between legs lets the relay settle.
  const chosen = process.env.LEGS?.split('|').map((name) => {
    const leg = legs.find((l) => l.name === name);
    if (!leg) throw new Error(`no leg ${name}`);
    return leg;
  });
  if (chosen) legs.splice(0, legs.length, ...chosen);
  const results = new Map<string, Array<{ reqPerSec: number; p50: number; p99: number; waits: Map<string, number> }>>();
  for (let r = 0; r < rounds; r++) {
    for (const leg of legs) {
      await leg.setup();
      await new Promise((res) => setTimeout(res, 2_000));
      const waits = new Map<string, number>();
      let sampling = true;
      const sampler = (async () => {
        while (sampling) {
          const rows: Array<{ w: string; c: number }> = await ds.query(
            `SELECT coalesce(wait_event_type || ':' || wait_event, state) AS w, count(*)::int AS c FROM pg_stat_activity
              WHERE datname = current_database() AND application_name <> 'slipway-bench' AND state <> 'idle' ` +
              `AND pid <> pg_backend_pid() GROUP BY 1`,
          );
          for (const row of rows) waits.set(row.w, (waits.get(row.w) ?? 0) + row.c);
          waits.set('(samples)', (waits.get('(samples)') ?? 0) + 1);
          await new Promise((res) => setTimeout(res, 50));
        }
      })();
      const res = await leg.run();
      sampling = false;
      await sampler;
      if (res.errors) throw new Error(`${leg.name}: ${res.errors} errors`);
      const list = results.get(leg.name) ?? [];
      list.push({ ...res, waits });
      results.set(leg.name, list);
      console.log(
        `round ${r + 1} ${leg.name.padEnd(24)} ${res.reqPerSec.toFixed(1).padStart(7)} req/s  p50 ${res.p50} ms  p99 ${res.p99} ms`,
      );
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  console.log('\nmedians over rounds; wait events: mean api backends in each state per sample');
  for (const [name, list] of results) {
    const waits = new Map<string, number>();
    for (const l of list) for (const [k, v] of l.waits) waits.set(k, (waits.get(k) ?? 0) + v);
    const samples = waits.get('(samples)') ?? 1;
    waits.delete('(samples)');
    const top = [...waits]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 6)
      .map(([k, v]) => `${k} ${(v / samples).toFixed(2)}`)
      .join(', ');
    console.log(
      `${name.padEnd(24)} ${median(list.map((l) => l.reqPerSec))
        .toFixed(1)
        .padStart(
          7,
        )} req/s  p50 ${median(list.map((l) => l.p50))} ms  p99 ${median(list.map((l) => l.p99))} ms  | ${top}`,
    );
  }
} finally {
  await stack.close();
}
