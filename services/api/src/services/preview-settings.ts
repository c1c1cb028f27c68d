import type { SecretsCodec, NamedSecret } from '@slipway/crypto';
import type { PreviewSettings } from '@slipway/db';
import { DEFAULT_APPROVAL_LABEL, SECRET_MASK } from '@slipway/domain';
import type { PreviewSettingsInput } from '../schemas/deployment.schema.js';
import { applySecrets } from './deployment-rules.js';

export type { PreviewSettingsInput };

/** The sealing context of a parent's preview secret overrides: never confused with its own secrets. */
const context = (deploymentId: string) => `${deploymentId}:previews`;

/**
 * `source_config.previews` as stored (docs/api.md, Previews): the secret overrides sealed, their
 * names beside them, never a value in clear in the deployment's jsonb. `input` undefined keeps
 * what is stored; its `secrets` replace the stored overrides, a masked value keeping the stored
 * one (as a deployment's own secrets do); `secrets` left out keeps the stored overrides.
 */
export function storedPreviewSettings(
  input: PreviewSettingsInput | null | undefined,
  stored: PreviewSettings | null | undefined,
  codec: SecretsCodec,
  deploymentId: string,
): PreviewSettings | null | undefined {
  if (input === undefined || input === null) return input === null ? null : stored;
  const { secrets: overrides, ...settings } = input;
  if (overrides === undefined)
    return { ...settings, secret_names: stored?.secret_names ?? [], secrets_sealed: stored?.secrets_sealed ?? null };
  const merged = applySecrets(previewSecretOverrides(stored, codec, deploymentId), overrides ?? []);
  return {
    ...settings,
    secret_names: merged.map((s) => s.name),
    secrets_sealed: codec.sealSecrets(merged, context(deploymentId)),
  };
}

/** The parent's secret overrides for its previews, opened. */
export function previewSecretOverrides(
  stored: PreviewSettings | null | undefined,
  codec: SecretsCodec,
  deploymentId: string,
): NamedSecret[] {
  return stored?.secrets_sealed ? codec.openSecrets(stored.secrets_sealed, context(deploymentId)) : [];
}

/** As responses show it: the overrides' names, their values masked. */
export function presentPreviewSettings(stored: PreviewSettings | null | undefined) {
  if (!stored) return null;
  const { secret_names: names, secrets_sealed: _sealed, ...settings } = stored;
  return {
    ...settings,
    approval_label: approvalLabelOf(stored),
    secrets: (names ?? []).map((name) => ({ name, value: SECRET_MASK })),
  };
}

/** The label that approves a fork's pull request under these settings (settings stored before the field: the default). */
export const approvalLabelOf = (stored: Pick<PreviewSettings, 'approval_label'>): string | null =>
  stored.approval_label === undefined ? DEFAULT_APPROVAL_LABEL : stored.approval_label;
