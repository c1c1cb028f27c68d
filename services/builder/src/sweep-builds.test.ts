import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../../../test/support/test-api.js';
import { sweepBuildDirectories } from './sweep-builds.js';

let api: TestApi;
let dataDir: string;

beforeAll(async () => {
  api = await startTestApi();
  dataDir = mkdtempSync(path.join(tmpdir(), 'slipway-sweep-'));
});
afterAll(async () => {
  await api?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('sweepBuildDirectories', () => {
  it('removes directories no build is using and keeps the live build at its attempt', async () => {
    const [{ id: deploymentId }] = await api.dataSource.query(
      `INSERT INTO deployments (id, workspace_id, name, source, status, resource_spec) 
         VALUES (gen_random_uuid(), $1, 'sweep', 'upload', 'READY', '{}') RETURNING id`,
      [api.workspaceId],
    );
    const building = randomUUID();
    const failed = randomUUID();
    for (const [id, status, attempt] of [
      [building, 'BUILDING', 1],
      [failed, 'BUILD_FAILED', 0],
    ] as const) {
      await api.dataSource.query(
        `INSERT INTO revisions (id, deployment_id, status, source, resource_spec, attempt) VALUES ($1, $2, $3, 'upload', '{}', $4)`,
        [id, deploymentId, status, attempt],
      );
    }
    const dirs = [`${building}-a1`, `${building}-a0`, `${failed}-a0`, `${randomUUID()}-a0`, 'not-a-build'];
    for (const d of dirs) mkdirSync(path.join(dataDir, 'builds', d, 'source'), { recursive: true });

    const removed = await sweepBuildDirectories(dataDir, api.dataSource);
    expect(removed.sort()).toEqual([`${building}-a0`, `${failed}-a0`, dirs[3]!].sort());
    expect(existsSync(path.join(dataDir, 'builds', `${building}-a1`))).toBe(true);
    expect(existsSync(path.join(dataDir, 'builds', 'not-a-build'))).toBe(true);
  });

  it('does nothing without a builds directory', async () => {
    expect(await sweepBuildDirectories(path.join(dataDir, 'nope'), api.dataSource)).toEqual([]);
  });
});
