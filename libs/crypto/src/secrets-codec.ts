import { SecretBox } from './secret-box.js';
import { fingerprintKey, secretFingerprint } from './secret-fingerprint.js';

/** The keys a codec is built from (Config's `secretsKey` and `previousSecretsKeys`). */
export interface SecretsKeys {
  secretsKey: { key: Buffer };
  previousSecretsKeys: readonly Buffer[];
}

/** A named secret as deployments and revisions keep them: `[{name, value}]`. */
export interface NamedSecret {
  name: string;
  value: string;
}

/**
 * How a process seals and opens secrets at rest. Built once per process (`secretsCodec`) and
 * injected wherever a secret is stored or read; every value is bound to its owning row's id (the
 * context), so a ciphertext copied into another row does not open there. Structured values go
 * through `sealJson`/`openJson`, and a deployment's or revision's secrets through
 * `sealSecrets`/`openSecrets`, so no caller parses an opened string by hand.
 */
export class SecretsCodec {
  /** `fingerprintKey`: the key of `fingerprints()`, derived from the current secrets key. */
  constructor(
    private readonly box: SecretBox,
    private readonly fingerprintKey: Buffer,
  ) {}

  /** The key id new values are sealed with. */
  get currentKeyId(): string {
    return this.box.currentKeyId;
  }

  seal(plaintext: string, context: string): string {
    return this.box.seal(plaintext, context);
  }

  open(sealed: string, context: string): string {
    return this.box.open(sealed, context);
  }

  sealJson(value: unknown, context: string): string {
    return this.box.seal(JSON.stringify(value), context);
  }

  openJson<T>(sealed: string, context: string): T {
    return JSON.parse(this.box.open(sealed, context)) as T;
  }

  /** Secrets as a row stores them: none is null, not a sealed empty list. */
  sealSecrets(secrets: readonly NamedSecret[], context: string): string | null {
    return secrets.length ? this.sealJson(secrets, context) : null;
  }

  openSecrets(sealed: string | null | undefined, context: string): NamedSecret[] {
    return sealed ? this.openJson<NamedSecret[]>(sealed, context) : [];
  }

  /**
   * Each secret's keyed fingerprint by name (secret-fingerprint.ts): what a revision keeps so a
   * client can tell which values changed between two revisions of `deploymentId`, never the values.
   */
  fingerprints(secrets: readonly NamedSecret[], deploymentId: string): Record<string, string> {
    return Object.fromEntries(
      secrets.map((s) => [s.name, secretFingerprint(this.fingerprintKey, deploymentId, s.name, s.value)]),
    );
  }
}

/** The process's codec: the one place a SecretBox is made from the configured keys. */
export function secretsCodec(keys: SecretsKeys): SecretsCodec {
  return new SecretsCodec(
    new SecretBox(keys.secretsKey.key, keys.previousSecretsKeys),
    fingerprintKey(keys.secretsKey.key),
  );
}
