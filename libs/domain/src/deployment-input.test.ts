import { describe, expect, it } from 'vitest';
import {
  createDeploymentProblems,
  createDeploymentType,
  imagePullSecretInputProblems,
  patchImageProblems,
  revisionImageProblems,
  type DeploymentCreateInput,
} from './deployment-input.js';
import { bodyProblem, resourceSpecProblem, valueError } from './input-problems.js';
import type { ResourceCeilings } from './resource-spec.js';

const CEILINGS: ResourceCeilings = { memoryMb: 65536, cpu: 64, diskGi: 1000, dbConnections: 1000 };
const INTEGRATION = '6f1c0e1e-8f7a-4c43-9f0e-2d1b6c2a0b11';
const LISTENER = '0b6b1a52-3c2d-4b8e-a1f0-7e9d5c4b3a21';

const body = (
  sc: DeploymentCreateInput['source_config'] = {},
  src: DeploymentCreateInput['source_revision_config'] = {},
  extra: Partial<DeploymentCreateInput> = {},
): DeploymentCreateInput => ({
  source_config: sc,
  source_revision_config: src,
  ...extra,
});

describe('input problems', () => {
  it('locate body fields, spec fields and value errors as the 422 lists them', () => {
    expect(bodyProblem(['name'], 'missing', 'Field required')).toEqual({
      loc: ['body', 'name'],
      msg: 'Field required',
      type: 'missing',
    });
    expect(valueError(['a', 0], 'a is wrong')).toEqual({
      loc: ['body', 'a', 0],
      msg: 'Value error, a is wrong',
      type: 'value_error',
    });
    expect(resourceSpecProblem(['sidecars', 0], 'pod_policy', 'm')).toEqual({
      loc: ['body', 'source_config', 'resource_spec', 'sidecars', 0],
      msg: 'm',
      type: 'pod_policy',
    });
  });
});

describe('createDeploymentType', () => {
  it('is dev by default, the type asked for (top level first), and none for self-hosted sources', () => {
    expect(createDeploymentType('repohost', body())).toBe('dev');
    expect(createDeploymentType('upload', body({ deployment_type: 'prod' }))).toBe('prod');
    expect(
      createDeploymentType('repohost', body({ deployment_type: 'prod' }, {}, { deployment_type: 'dev_free' })),
    ).toBe('dev_free');
    expect(createDeploymentType('external_container', body({ deployment_type: 'prod' }))).toBeNull();
  });
});

describe('createDeploymentProblems', () => {
  const valid: Array<[Parameters<typeof createDeploymentProblems>[0], DeploymentCreateInput]> = [
    ['repohost', body({ integration_id: INTEGRATION, repo_url: 'https://example.test/o/r' }, {})],
    ['external_container', body({ listener_id: LISTENER }, { image_uri: 'ghcr.io/o/app:1' })],
    ['external_container', body({}, { image_uri: 'ghcr.io/o/app:1' })],
    ['upload', body()],
    ['internal_docker', body({ resource_spec: { cpu: 2, memory_mb: 2048 } }, {}, { deployment_type: 'prod' })],
  ];
  it.each(valid)('finds nothing wrong with a valid %s create', (source, input) => {
    expect(createDeploymentProblems(source, input, CEILINGS)).toEqual([]);
  });

  it('repohost: integration and repository required; listener and image refused', () => {
    expect(
      createDeploymentProblems('repohost', body({ repo_url: '', listener_id: LISTENER }, { image_uri: 'x' }), CEILINGS),
    ).toEqual([
      {
        loc: ['body', 'source_config', 'integration_id'],
        msg: 'Field required for repohost deployments',
        type: 'missing',
      },
      { loc: ['body', 'source_config', 'repo_url'], msg: 'Field required for repohost deployments', type: 'missing' },
      {
        loc: ['body', 'source_config', 'listener_id'],
        msg: 'Value error, listener_id is only for external_container deployments',
        type: 'value_error',
      },
      {
        loc: ['body', 'source_revision_config', 'image_uri'],
        msg: 'Value error, image_uri is only for external_container deployments',
        type: 'value_error',
      },
    ]);
  });

  it('external_container: image required; repository fields and a type refused', () => {
    expect(
      createDeploymentProblems(
        'external_container',
        body({ integration_id: INTEGRATION, repo_url: 'r', deployment_type: 'dev' }),
        CEILINGS,
      ),
    ).toEqual([
      {
        loc: ['body', 'source_config', 'deployment_type'],
        msg: 'Value error, deployment_type must be null for external_container deployments',
        type: 'value_error',
      },
      {
        loc: ['body', 'source_revision_config', 'image_uri'],
        msg: 'Field required for external_container deployments',
        type: 'missing',
      },
      {
        loc: ['body', 'source_config', 'integration_id'],
        msg: 'Value error, integration_id is only for repohost deployments',
        type: 'value_error',
      },
      {
        loc: ['body', 'source_config', 'repo_url'],
        msg: 'Value error, repo_url is only for repohost deployments',
        type: 'value_error',
      },
    ]);
    // The top-level deployment_type is the one named when both are given.
    expect(
      createDeploymentProblems(
        'external_container',
        body({ deployment_type: 'dev' }, { image_uri: 'i' }, { deployment_type: 'prod' }),
        CEILINGS,
      ),
    ).toEqual([valueError(['deployment_type'], 'deployment_type must be null for external_container deployments')]);
  });

  it('upload and internal_docker: no listener, repository or image; internal_docker says how its image is named', () => {
    const everything = body({ listener_id: LISTENER, integration_id: INTEGRATION, repo_url: 'r' }, { image_uri: 'i' });
    const common = [
      valueError(['source_config', 'listener_id'], 'listener_id is only for external_container deployments'),
      valueError(['source_config', 'integration_id'], 'integration_id is only for repohost deployments'),
      valueError(['source_config', 'repo_url'], 'repo_url is only for repohost deployments'),
    ];
    expect(createDeploymentProblems('upload', everything, CEILINGS)).toEqual([
      ...common,
      valueError(['source_revision_config', 'image_uri'], 'image_uri is only for external_container deployments'),
    ]);
    expect(createDeploymentProblems('internal_docker', everything, CEILINGS)).toEqual([
      ...common,
      valueError(
        ['source_revision_config', 'image_uri'],
        'image_uri is set by a PATCH after pushing the image (POST /v2/deployments/{id}/push-token)',
      ),
    ]);
  });

  it('refuses a tarball path whatever the source: none can exist before the deployment', () => {
    for (const source of ['upload', 'repohost'] as const) {
      const input =
        source === 'repohost'
          ? body({ integration_id: INTEGRATION, repo_url: 'r' }, { source_tarball_path: 'p' })
          : body({}, { source_tarball_path: 'p' });
      expect(createDeploymentProblems(source, input, CEILINGS)).toEqual([
        valueError(
          ['source_revision_config', 'source_tarball_path'],
          'source_tarball_path is set by a PATCH after uploading through POST /v2/deployments/{id}/upload-url',
        ),
      ]);
    }
  });

  it('lists the type first, then the resource_spec, then the source fields', () => {
    const input = body({ deployment_type: 'dev', resource_spec: { db_storage_gi: 2000, min_scale: 3, max_scale: 2 } });
    expect(createDeploymentProblems('external_container', input, CEILINGS).map((p) => p.loc.join('.'))).toEqual([
      'body.source_config.deployment_type',
      'body.source_config.resource_spec.db_storage_gi',
      'body.source_config.resource_spec.min_scale',
      'body.source_revision_config.image_uri',
    ]);
  });
});

describe('patchImageProblems', () => {
  it('allows an image for image deployments, and no image for any', () => {
    expect(patchImageProblems('external_container', 'i')).toEqual([]);
    expect(patchImageProblems('internal_docker', 'i')).toEqual([]);
    expect(patchImageProblems('repohost', null)).toEqual([]);
    expect(patchImageProblems('upload', undefined)).toEqual([]);
  });

  it('refuses an image for built deployments', () => {
    expect(patchImageProblems('repohost', 'i')).toEqual([
      {
        loc: ['body', 'source_revision_config', 'image_uri'],
        msg: 'Value error, image_uri is only for external_container and internal_docker deployments',
        type: 'value_error',
      },
    ]);
  });
});

describe('revisionImageProblems', () => {
  it('requires an image of image deployments only', () => {
    expect(revisionImageProblems('external_container', 'i')).toEqual([]);
    expect(revisionImageProblems('repohost', null)).toEqual([]);
    expect(revisionImageProblems('internal_docker', null)).toEqual([
      {
        loc: ['body', 'source_revision_config', 'image_uri'],
        msg: 'Field required for internal_docker deployments',
        type: 'missing',
      },
    ]);
    expect(revisionImageProblems('external_container', '')).toEqual([
      bodyProblem(
        ['source_revision_config', 'image_uri'],
        'missing',
        'Field required for external_container deployments',
      ),
    ]);
  });
});

describe('imagePullSecretInputProblems', () => {
  const secrets = [
    { name: 'PAIR', value: 'user:pass' },
    { name: 'WORD', value: 'justaword' },
  ];
  const spec = { image_pull_secrets: [{ name: 'PAIR' }, { name: 'MISSING' }, { name: 'WORD' }] };

  it('finds nothing when every named secret holds a credential', () => {
    expect(
      imagePullSecretInputProblems('external_container', null, { image_pull_secrets: [{ name: 'PAIR' }] }, secrets),
    ).toEqual([]);
    expect(imagePullSecretInputProblems('external_container', null, { image_pull_secrets: [] }, [])).toEqual([]);
  });

  it('names each unusable entry by its index on the embedded runtime', () => {
    expect(imagePullSecretInputProblems('external_container', undefined, spec, secrets)).toEqual([
      {
        loc: ['body', 'source_config', 'resource_spec', 'image_pull_secrets', 1, 'name'],
        msg: "Value error, no secret named 'MISSING' among the deployment's secrets",
        type: 'value_error',
      },
      {
        loc: ['body', 'source_config', 'resource_spec', 'image_pull_secrets', 2, 'name'],
        msg: "Value error, secret 'WORD' is neither a Docker config JSON nor user:password",
        type: 'value_error',
      },
    ]);
  });

  it('leaves them to the cluster on a listener, and ignores them for other sources', () => {
    expect(imagePullSecretInputProblems('external_container', LISTENER, spec, secrets)).toEqual([]);
    expect(imagePullSecretInputProblems('internal_docker', null, spec, secrets)).toEqual([]);
  });
});
