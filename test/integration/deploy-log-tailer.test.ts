import { appendFileSync, existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DeployLogTailer } from '../../services/deployer/src/deploy-log-tailer.js';
import { createImageDeployment, createListener } from '../support/fixtures.js';
import { eventually } from '../support/service-process.js';
import { startTestApi, type TestApi } from '../support/test-api.js';

/**
 * An instance's log file is followed into its revision's deploy log (real Postgres) and rotated
 * past its cap without losing a line from the deploy log.
 */
let api: TestApi;
let dir: string;
let revisionId: string;

beforeAll(async () => {
  api = await startTestApi();
  const listenerId = await createListener(api, 'tailer');
  revisionId = (await createImageDeployment(api, 'tailer-app', listenerId)).latest_revision_id;
  dir = mkdtempSync(path.join(tmpdir(), 'slipway-tailer-'));
});

afterAll(async () => {
  await api?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const deployLines = async () =>
  (
    (await api.dataSource.query(
      `SELECT message FROM revision_logs WHERE revision_id = $1 AND type = 'deploy' ORDER BY id`,
      [revisionId],
    )) as { message: string }[]
  ).map((r) => r.message);

describe('DeployLogTailer', () => {
  it('rotates the file past its cap (one rotated file) and copies every line into the deploy log', async () => {
    const file = path.join(dir, 'instance.log');
    writeFileSync(file, '');
    const cap = 4_096;
    const tailer = new DeployLogTailer(api.dataSource, revisionId, file, [], cap);
    await tailer.start();
    // Written in bursts, as an app does, with the tailer polling in between.
    for (let burst = 0; burst < 5; burst++) {
      appendFileSync(file, Array.from({ length: 60 }, (_, i) => `line ${burst * 60 + i} ${'x'.repeat(60)}\n`).join(''));
      await eventually(
        async () => statSync(file).size,
        (size) => size < cap,
        20_000,
        50,
      );
    }
    expect(existsSync(`${file}.1`)).toBe(true);
    await tailer.stop();
    const lines = (await deployLines()).filter((l) => l.startsWith('line '));
    expect(lines.map((l) => Number(l.split(' ')[1]))).toEqual(Array.from({ length: 300 }, (_, i) => i));
  });

  it('keeps 64 KiB of a newline-free 8 MB line and says how many bytes it dropped', async () => {
    const file = path.join(dir, 'flood.log');
    writeFileSync(file, '');
    const tailer = new DeployLogTailer(api.dataSource, revisionId, file, []);
    await tailer.start();
    const piece = 'f'.repeat(1024 * 1024);
    for (let i = 0; i < 8; i++) appendFileSync(file, piece);
    appendFileSync(file, '\nafter the flood\n');
    await eventually(deployLines, (lines) => lines.includes('after the flood'), 20_000, 100);
    await tailer.stop();
    const flood = (await deployLines()).find((l) => l.startsWith('fff'));
    expect(flood).toBe(`${'f'.repeat(64 * 1024)}… [${8 * 1024 * 1024 - 64 * 1024} bytes dropped]`);
  });

  it('remove() deletes the file, its rotated file and its offset', async () => {
    const file = path.join(dir, 'gone.log');
    for (const f of [file, `${file}.1`, `${file}.offset`]) writeFileSync(f, 'x');
    await DeployLogTailer.remove(file);
    for (const f of [file, `${file}.1`, `${file}.offset`]) expect(existsSync(f)).toBe(false);
  });
});
