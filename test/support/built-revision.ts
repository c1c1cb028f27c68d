import { randomUUID } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { secretsCodec } from '@slipway/crypto';
import type { ArtifactManifest } from '@slipway/domain';
import { expect } from 'vitest';
import { eventually } from './service-process.js';
import type { TestApi } from './test-api.js';

/**
 * Built revisions without a builder: `<dataDir>/artifacts/<revision>` written in the builder's
 * artifact layout (a node app started with `npm run start`), entering the pipeline the way the
 * api adds one (row + RevisionFlow.admit + outbox). For tests of the deployer and what it serves.
 */
export function writeArtifact(
  api: TestApi,
  revisionId: string,
  server: string,
  manifest: Partial<ArtifactManifest> = {},
): string {
  const dir = path.join(api.config.dataDir, 'artifacts', revisionId);
  mkdirSync(path.join(dir, 'app'), { recursive: true });
  writeFileSync(
    path.join(dir, 'app', 'package.json'),
    JSON.stringify({
      name: 'probe-app',
      version: '1.0.0',
      private: true,
      type: 'module',
      scripts: { start: 'node server.mjs' },
    }),
  );
  writeFileSync(path.join(dir, 'app', 'server.mjs'), server);
  writeFileSync(
    path.join(dir, 'artifact.json'),
    JSON.stringify({
      version: 1,
      revision_id: revisionId,
      commit: null,
      graphs: { agent: './server.mjs:graph' },
      env: null,
      node_version: null,
      start: { command: 'npm', args: ['run', 'start'], cwd: '.' },
      ...manifest,
    }),
  );
  return dir;
}

/** A built revision of `deploymentId` running `server`; returns its id. */
export const addBuiltRevision = (
  api: TestApi,
  deploymentId: string,
  server: string,
  manifest: Partial<ArtifactManifest> = {},
): Promise<string> => addRevisionOf(api, deploymentId, (id) => writeArtifact(api, id, server, manifest));

/**
 * A built revision of `deploymentId` whose artifact `write` makes (given the revision's id, it
 * returns the artifact's directory), with `revisionConfig` as its source_revision_config (what
 * a build records there, as `agent_server`); returns its id.
 */
export async function addRevisionOf(
  api: TestApi,
  deploymentId: string,
  write: (revisionId: string) => string | Promise<string>,
  revisionConfig: Record<string, unknown> = {},
): Promise<string> {
  const box = secretsCodec(api.config);
  const id = randomUUID();
  const artifact = await write(id);
  await api.dataSource.transaction(async (m) => {
    const [d] = await m.query(`SELECT resource_spec, secrets_sealed FROM deployments WHERE id = $1 FOR UPDATE`, [
      deploymentId,
    ]);
    const secrets: Array<{ name: string; value: string }> = d.secrets_sealed
      ? JSON.parse(box.open(d.secrets_sealed, deploymentId))
      : [];
    await m.query(
      `INSERT INTO revisions (id, deployment_id, status, source, artifact_ref, image_uri, resource_spec, ` +
        `secrets_sealed, secret_names, source_revision_config, created_at)
       VALUES ($1, $2, 'CREATING', 'upload', $3, $4, $5, $6, $7, $8, clock_timestamp())`,
      [
        id,
        deploymentId,
        artifact,
        `artifact://${id}`,
        JSON.stringify(d.resource_spec),
        box.seal(JSON.stringify(secrets), id),
        secrets.map((s) => s.name),
        JSON.stringify(revisionConfig),
      ],
    );
    await m.query(`UPDATE deployments SET latest_revision_id = $2 WHERE id = $1`, [deploymentId, id]);
    await api.flow.admit(m, deploymentId, id);
  });
  return id;
}

/**
 * A new `upload` deployment named `name` serving `server` as a built revision, rolled out by the
 * running deployer: waits for DEPLOYED (fails the test on a failed rollout) and returns the
 * deployment's serving port.
 */
export async function deployBuiltApp(
  api: TestApi,
  name: string,
  server: string,
  manifest: Partial<ArtifactManifest> = {},
): Promise<{ deploymentId: string; revisionId: string; servingPort: number }> {
  const created = await api.http.post('/v2/deployments', {
    name,
    source: 'upload',
    source_config: {},
    source_revision_config: {},
  });
  expect(created.status, created.text).toBe(201);
  const deploymentId: string = created.body.id;
  const revisionId = await addBuiltRevision(api, deploymentId, server, manifest);
  const settled = await eventually(
    async () => (await api.http.get(`/v2/deployments/${deploymentId}/revisions/${revisionId}`)).body,
    (r) => ['DEPLOYED', 'DEPLOY_FAILED', 'CREATE_FAILED'].includes(r.status),
    90_000,
    200,
  );
  expect(settled.status, settled.status_message).toBe('DEPLOYED');
  const [{ serving_port }] = await api.dataSource.query(`SELECT serving_port FROM deployments WHERE id = $1`, [
    deploymentId,
  ]);
  return { deploymentId, revisionId, servingPort: serving_port };
}
