import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll } from 'vitest';
import { closeBrowser } from './console-page.js';
import { createListener } from './fixtures.js';
import type { HttpClient } from './http.js';
import { serviceEnv, startService, type ServiceProcess } from './service-process.js';
import { startTestApi, type TestApi } from './test-api.js';

/** A test api whose `external_container` deployments roll out through a listener the test plays. */
export interface ListenerStand {
  api: TestApi;
  /** A k8s listener (namespace `agents`). */
  listenerId: string;
  /** The listener agent's own client (its key), for agentApplies (console-page.ts). */
  agent: HttpClient;
}

/**
 * A console test file's stand, started before its tests: the real api with its outbox relay and
 * the deployer running, and a listener whose agent the test plays (it would run in a customer's
 * cluster). After the file's tests, its browser is closed and the stand stopped. The fields are
 * filled in by the time the first test runs; `name` starts the listener's compute id.
 */
export function listenerStandForFile(name: string): ListenerStand {
  const stand = {} as ListenerStand;
  let deployer: ServiceProcess | undefined;
  beforeAll(async () => {
    stand.api = await startTestApi();
    stand.api.relay.start();
    deployer = await startService('deployer', serviceEnv(stand.api));
    stand.listenerId = await createListener(stand.api, `${name}-${randomUUID()}`, ['agents']);
    stand.agent = stand.api.http.as(await stand.api.mintKey({ listenerId: stand.listenerId }));
  }, 90_000);
  afterAll(async () => {
    await closeBrowser();
    await deployer?.stop();
    await stand.api?.close();
  });
  return stand;
}
