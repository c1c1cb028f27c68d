import { createHmac, randomBytes } from 'node:crypto';

/** Signing secrets are shown as `whsec_<base64>`; the key is the decoded bytes (Standard Webhooks). */
export const WEBHOOK_SECRET_PREFIX = 'whsec_';

/** A new signing secret: 32 random bytes. */
export function generateWebhookSecret(): string {
  return WEBHOOK_SECRET_PREFIX + randomBytes(32).toString('base64');
}

/**
 * The headers of one signed delivery, following the Standard Webhooks scheme
 * (docs/api.md, Events and webhooks): `webhook-signature` is `v1,<base64 HMAC-SHA256>` over
 * `<webhook-id>.<webhook-timestamp>.<body>`, keyed with the secret's decoded bytes.
 */
export function signWebhook(
  secret: string,
  id: string,
  timestampSeconds: number,
  body: string,
): Record<string, string> {
  const key = Buffer.from(secret.slice(WEBHOOK_SECRET_PREFIX.length), 'base64');
  const signature = createHmac('sha256', key).update(`${id}.${timestampSeconds}.${body}`).digest('base64');
  return { 'webhook-id': id, 'webhook-timestamp': String(timestampSeconds), 'webhook-signature': `v1,${signature}` };
}
