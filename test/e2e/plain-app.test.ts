import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonServer, nodeApp, startCodeDeployStand, type CodeDeployStand } from '../support/code-deploy-stand.js';

/**
 * Issue 22's "a plain Node app fails its first deploy", as a new user meets it: a repository with
 * a package.json whose `start` script runs its own server, and no langgraph.json, goes from a
 * create through the real api, builder and deployer to DEPLOYED and answers at its serving URL.
 * Such an app authenticates its callers itself (docs/api.md, Serving URLs): no key is sent.
 */
const SERVER = jsonServer({ app: "'plain'", path: 'req.url', port: 'process.env.PORT' });

let stand: CodeDeployStand;

beforeAll(async () => {
  stand = await startCodeDeployStand();
}, 120_000);

afterAll(async () => {
  await stand?.close();
}, 60_000);

describe('a plain Node app (a start script, no langgraph.json)', () => {
  it('deploys on its first try and serves through its URL', async () => {
    stand.commit('plain-node-app', nodeApp('plain-node-app', SERVER, { graphConfig: false }));
    const { deploymentId, revisionId } = await stand.deploy('plain-node-app');
    const revision = await stand.untilDone(deploymentId, revisionId);
    expect(revision.status, revision.status_message).toBe('DEPLOYED');
    expect(await stand.logLines(deploymentId, revisionId, 'build')).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^No graph config file \(langgraph\.json\) at .*: a plain app\.$/),
      ]),
    );

    const deployment = (await stand.http.get(`/v2/deployments/${deploymentId}`)).body;
    expect(deployment).toMatchObject({ status: 'READY', active_revision_id: revisionId, agent_server: false });
    expect(deployment.url).toMatch(/^http:\/\//);
    const res = await fetch(`${deployment.url}/hello?from=test`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { app: string; path: string; port: string };
    expect(body).toMatchObject({ app: 'plain', path: '/hello?from=test' });
    expect(Number(body.port)).toBeGreaterThan(0);
  }, 300_000);
});
