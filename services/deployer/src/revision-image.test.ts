import { randomBytes, randomUUID } from 'node:crypto';
import { loadConfig } from '@slipway/config';
import { describe, expect, it } from 'vitest';
import { imageSource, type RevisionImageRow } from './revision-image.js';

/**
 * The deployer's own refusal of an image in another deployment's repository of the built-in
 * registry: the api refuses such a revision with a 422 (test/e2e/langgraph-cli-image.test.ts),
 * and this is what keeps a revision written some other way (an older release's rows) from being
 * pulled with the platform credential, which reads every repository.
 */
const config = loadConfig({ SLIPWAY_SECRETS_KEY: randomBytes(32).toString('base64') });
const registry = config.registry.publicAddress;
const row = (deploymentId: string, image: string): RevisionImageRow => ({
  deployment_id: deploymentId,
  source: 'external_container',
  image_uri: image,
  image_digest: null,
  resource_spec: null,
});

describe('imageSource, the built-in registry', () => {
  it("refuses another deployment's repository", async () => {
    const [mine, theirs] = [randomUUID(), randomUUID()];
    await expect(imageSource(config, row(mine, `${registry}/${theirs}/web:v1`))).rejects.toThrow(
      `Slipway runs images of the built-in registry only from the deployment's own repositories (${registry}/${mine}/<name>)`,
    );
  });

  it('pulls its own repository at the internal address with the platform credential, never the public one', async () => {
    const mine = randomUUID();
    const source = await imageSource(config, row(mine, `${registry}/${mine}/web:v1`));
    expect(source.reference).toBe(`${new URL(config.registry.internalUrl).host}/${mine}/web:v1`);
    expect(source.credentials).toMatch(/^[^:]+:.+/);
  });
});
