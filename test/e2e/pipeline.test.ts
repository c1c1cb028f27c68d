import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repohostFixture } from '../support/git-fixtures.js';
import { eventually, serviceEnv, startService, type ServiceProcess } from '../support/service-process.js';
import { startTestApi, type TestApi } from '../support/test-api.js';

let api: TestApi;
let builder: ServiceProcess;
let deployer: ServiceProcess;
let listenerId: string;

beforeAll(async () => {
  api = await startTestApi();
  api.relay.start();
  [builder, deployer] = await Promise.all([
    startService('builder', serviceEnv(api)),
    startService('deployer', serviceEnv(api)),
  ]);
  const res = await api.http.post('/v2/listeners', {
    compute_type: 'k8s',
    compute_id: 'e2e',
    compute_config: { k8s_namespaces: ['agents'] },
  });
  listenerId = res.body.id;
}, 60_000);

afterAll(async () => {
  await Promise.all([builder?.stop(), deployer?.stop()]);
  await api?.close();
});

const revisionOf = async (deploymentId: string, revisionId: string) =>
  (await api.http.get(`/v2/deployments/${deploymentId}/revisions/${revisionId}`)).body;

describe('pipeline with real builder and deployer processes', () => {
  it('publishes an image revision to its listener (DEPLOYING); the deployment, created AWAITING_DATABASE, is READY as it begins', async () => {
    const { body: d } = await api.http.post('/v2/deployments', {
      name: 'e2e-image',
      source: 'external_container',
      source_config: { listener_id: listenerId },
      source_revision_config: { image_uri: 'registry.example/agent:1' },
    });
    expect(d.status).toBe('AWAITING_DATABASE');
    const rev = await eventually(
      () => revisionOf(d.id, d.latest_revision_id),
      (r) => r.status === 'DEPLOYING',
    );
    expect(rev.status_message).toMatch(/listener/);
    const deployment = await eventually(
      async () => (await api.http.get(`/v2/deployments/${d.id}`)).body,
      (x) => x.status === 'READY',
    );
    expect(deployment.active_revision_id).toBeNull();
    const events = await api.dataSource.query(
      `SELECT from_status, to_status FROM revision_events WHERE revision_id = $1 ORDER BY id`,
      [d.latest_revision_id],
    );
    expect(events.map((e: any) => `${e.from_status}>${e.to_status}`)).toEqual([
      'CREATING>AWAITING_DEPLOY',
      'AWAITING_DEPLOY>DEPLOYING',
    ]);
    // The deployment's lifecycle as the api documents it, moved by the rollout's begin: no
    // provision.deployment job was ever recorded for it.
    const lifecycle = await api.dataSource.query(
      `SELECT type, data FROM events WHERE deployment_id = $1 AND type LIKE 'deployment.%' ORDER BY uid`,
      [d.id],
    );
    expect(lifecycle).toEqual([
      { type: 'deployment.created', data: { name: 'e2e-image', status: 'AWAITING_DATABASE' } },
      { type: 'deployment.status_changed', data: { from: 'AWAITING_DATABASE', to: 'READY' } },
    ]);
    expect(
      await api.dataSource.query(
        `SELECT 1 FROM outbox WHERE job_name = 'provision.deployment' AND payload->>'deploymentId' = $1`,
        [d.id],
      ),
    ).toEqual([]);
  });

  it('fails a source build that cannot fetch its ref, saying what and where', async () => {
    const repo = await repohostFixture(api);
    const { body: d } = await api.http.post('/v2/deployments', {
      name: 'e2e-source',
      source: 'repohost',
      source_config: { integration_id: repo.integrationId, repo_url: repo.repoUrl },
      source_revision_config: { repo_ref: 'no-such-branch' },
    });
    const rev = await eventually(
      () => revisionOf(d.id, d.latest_revision_id),
      (r) => r.status === 'BUILD_FAILED',
    );
    expect(rev.status_message).toMatch(new RegExp(`^Branch or tag 'no-such-branch' not found in ${repo.repoUrl}\\.`));
    expect(rev.source_revision_config.repo_commit_sha).toBeNull();
    const redeploy = await api.http.post(`/v2/deployments/${d.id}/revisions/${d.latest_revision_id}/redeploy`);
    expect(redeploy.status).toBe(400);
  });
});
