import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, inject, it } from 'vitest';

/**
 * CI's short smoke run of the benchmark suite (`pnpm bench --quick --build start`): every scenario
 * runs end to end against the real api, builder, deployer and edge as `npm start` runs them, and
 * writes its ratios. It asserts that each measurement was made,
 * never how fast anything was (these machines are shared; bench/README.md and bench/history.md have real runs).
 */
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const out = mkdtempSync(path.join(tmpdir(), 'slipway-bench-smoke-'));
afterAll(() => rmSync(out, { recursive: true, force: true }));

describe('pnpm bench --quick', () => {
  it('runs every scenario and writes a ratio for each target', () => {
    const file = path.join(out, 'bench.json');
    // The deploy scenario's builder copies the agent server the run's other builders installed.
    const env = { ...process.env, SLIPWAY_AGENT_SERVER_HOST_CACHE: inject('agentServerHostCache') };
    // As `npm start` runs the services (`--build start`): the run's global setup already built
    // those entries, where the packaged build (the bench's default) would spend most of a minute
    // laying out production dependencies that test/infra/production-build.test.ts checks already.
    const run = spawnSync(
      process.execPath,
      ['--import', 'tsx', 'bench/run.ts', '--quick', '--build', 'start', '--out', file],
      {
        cwd: ROOT,
        env,
        encoding: 'utf8',
        timeout: 840_000,
      },
    );
    expect(run.status, run.stderr).toBe(0);
    // Where the smoke run's minutes go (bench/run.ts says how long each step took).
    console.log(
      run.stderr
        .split('\n')
        .filter((line) => / took /.test(line))
        .join('\n'),
    );
    const result = JSON.parse(readFileSync(file, 'utf8'));
    expect(result.build).toBe('start');
    // start-build.mjs's own build (or its stamp saying the build is current) ran, not the packaging.
    expect(run.stderr).toMatch(/built the services in|build is current/);
    const scenarios = new Set(
      result.rows.map((r: { scenario: string }) => r.scenario.split(':')[0]!.replace(/ \(.*| of \d+.*/, '')),
    );
    expect([...scenarios].sort()).toEqual(
      [
        'GET deployment',
        'GET revision',
        'agent server',
        'burst',
        'create',
        'create → handed to the real deployer',
        'create → handed to worker',
        'create → rollout begun, real deployer, under the 50-conn load',
        'create, real workers',
        'deploy latency',
        'desired-state',
        'idle stack',
        'list',
        'list deployments',
        'serving',
        'serving a plain app',
        'trace ingest',
        'trace list',
      ].sort(),
    );
    for (const row of result.rows) {
      expect(Number.isFinite(row.value), `${row.scenario} ${row.metric}`).toBe(true);
      if (row.target && row.baseline !== undefined)
        expect(Number.isFinite(row.ratio), `${row.scenario} ${row.metric}`).toBe(true);
    }
  }, 900_000);
});
