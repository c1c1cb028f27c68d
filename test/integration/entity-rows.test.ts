import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Deployment, entityRows, queryRows, Revision } from '@slipway/db';
import { startTestApi, type TestApi } from '../support/test-api.js';

/**
 * entityRows (libs/db/src/entity-rows.ts) reads rows by hand on the hot read paths: what it makes
 * of a row must be exactly what TypeORM's own query builder and result transformer make of it.
 */
let api: TestApi;

beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => {
  await api?.close();
});

describe('entityRows', () => {
  it('reads a deployment and a revision exactly as TypeORM does: every column, nulls, dates, jsonb and arrays', async () => {
    const created = await api.http.post('/v2/deployments', {
      name: 'rows-one',
      source: 'internal_source',
      source_config: { deployment_type: 'dev', resource_spec: { min_scale: 1 } },
      source_revision_config: {},
      secrets: [
        { name: 'B', value: 'b' },
        { name: 'A', value: 'a' },
      ],
      image_version: '1.0.0',
    });
    expect(created.status, created.text).toBe(201);
    const rows = entityRows(api.dataSource, Deployment, 'd');
    const [raw] = await queryRows(
      api.dataSource.manager,
      `SELECT ${rows.columns} FROM deployments "d" WHERE "d"."id" = $1`,
      [created.body.id],
    );
    const byHand = rows.read(raw!);
    const byTypeorm = await api.dataSource.manager.findOneByOrFail(Deployment, { id: created.body.id });
    expect(byHand).toBeInstanceOf(Deployment);
    expect(byHand).toEqual(byTypeorm);
    expect(byHand.createdAt).toBeInstanceOf(Date);
    expect(byHand.secretNames).toEqual(['B', 'A']);
    expect(byHand.listenerId).toBeNull();
    // Made once per data source and alias.
    expect(entityRows(api.dataSource, Deployment, 'd')).toBe(rows);
    // A revision too: its sealed secrets, build config, timestamps and nullable ids.
    const listener = await api.http.post('/v2/listeners', {
      compute_type: 'k8s',
      compute_id: 'rows',
      compute_config: { k8s_namespaces: null },
    });
    const image = await api.http.post('/v2/deployments', {
      name: 'rows-image',
      source: 'external_container',
      source_config: { listener_id: listener.body.id },
      source_revision_config: { image_uri: 'registry.example/rows:1' },
      secrets: [{ name: 'TOKEN', value: 't' }],
    });
    expect(image.status, image.text).toBe(201);
    const revisions = entityRows(api.dataSource, Revision, 'r');
    const [rawRevision] = await queryRows(
      api.dataSource.manager,
      `SELECT ${revisions.columns} FROM revisions "r" WHERE "r"."id" = $1`,
      [image.body.latest_revision_id],
    );
    expect(revisions.read(rawRevision!)).toEqual(
      await api.dataSource.manager.findOneByOrFail(Revision, { id: image.body.latest_revision_id }),
    );
  });
});
