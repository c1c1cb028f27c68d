import { randomBytes, randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { API_KEY_PREFIX } from './api-key.js';
import {
  ingestCredential,
  ingestCredentialDeployment,
  INGEST_CREDENTIAL_PREFIX,
  isIngestCredential,
} from './ingest-credential.js';

describe('trace-ingest credentials', () => {
  const key = randomBytes(32);
  const deployment = randomUUID();
  const credential = ingestCredential(key, deployment);

  it('is stable per deployment, distinct across deployments and keys, and never an API key', () => {
    expect(credential.startsWith(INGEST_CREDENTIAL_PREFIX)).toBe(true);
    expect(credential.startsWith(API_KEY_PREFIX)).toBe(false);
    expect(ingestCredential(key, deployment)).toBe(credential);
    expect(ingestCredential(key, deployment.toUpperCase())).toBe(credential);
    expect(ingestCredential(key, randomUUID())).not.toBe(credential);
    expect(ingestCredential(randomBytes(32), deployment)).not.toBe(credential);
    // It names the deployment it claims (checked only by the MAC).
    expect(ingestCredentialDeployment(credential)).toBe(deployment);
    expect(ingestCredentialDeployment('slwt_nothing')).toBeNull();
    expect(ingestCredentialDeployment(undefined)).toBeNull();
  });

  it("opens only its own deployment's door, under the current or a rotated-out key", () => {
    const rotated = randomBytes(32);
    expect(isIngestCredential(credential, [key], deployment)).toBe(true);
    expect(isIngestCredential(credential, [rotated, key], deployment)).toBe(true);
    expect(isIngestCredential(credential, [rotated], deployment)).toBe(false);
    expect(isIngestCredential(credential, [key], randomUUID())).toBe(false);
    // Whatever characters the MAC holds (base64url has '_' and '-'), it opens its own door.
    for (let i = 0; i < 500; i++) {
      const id = randomUUID();
      expect(isIngestCredential(ingestCredential(key, id), [key], id)).toBe(true);
    }
    // Another deployment's id with this MAC, or this id with another's MAC: refused.
    const other = randomUUID();
    const forged = credential.replace(deployment.replaceAll('-', ''), other.replaceAll('-', ''));
    expect(isIngestCredential(forged, [key], other)).toBe(false);
    for (const bad of [
      undefined,
      '',
      INGEST_CREDENTIAL_PREFIX,
      credential.slice(0, -2),
      `${credential}A`,
      credential.replace(INGEST_CREDENTIAL_PREFIX, API_KEY_PREFIX),
      '\u0000'.repeat(40),
    ]) {
      expect(isIngestCredential(bad, [key], deployment), String(bad)).toBe(false);
    }
  });
});
