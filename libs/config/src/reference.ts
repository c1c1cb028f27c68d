/**
 * docs/configuration.md, generated from the settings' declarations: a table per chapter with
 * each variable's default, accepted values and meaning. `reference.test.ts` fails when the file
 * is stale (`pnpm docs:configuration` rewrites it).
 */
import type Joi from 'joi';
import { jwtSettings, outboundSettings, rateLimitSettings, streamSettings } from './access.js';
import { agentSettings } from './agent.js';
import { ceilingSettings, deploymentDbSettings, quotaSettings } from './limits.js';
import { pipelineSettings, retentionSettings, webhookSettings } from './pipeline.js';
import { domainSettings } from './domains.js';
import { edgeSettings } from './edge.js';
import { registrySettings } from './registry.js';
import { runtimeSettings, sandboxSettings } from './sandbox.js';
import { secretsSettings } from './secrets-key.js';
import { derivedInputs, serverSettings } from './server.js';
import { settingsOf, type Group, type Setting } from './setting.js';

export interface Chapter {
  title: string;
  intro?: string;
  settings: Group;
}

/** The control plane's chapters (api, builder, deployer and `npm start` read all of these). */
export const CONTROL_PLANE_CHAPTERS: Chapter[] = [
  { title: 'Server and stores', settings: { ...serverSettings, ...derivedInputs, ...deploymentDbSettings } },
  { title: 'Secrets', settings: secretsSettings },
  {
    title: 'Access',
    intro: 'Request budgets count per window in Redis, shared by every api replica.',
    settings: { jwtSettings, rateLimitSettings, streamSettings, outboundSettings },
  },
  {
    title: 'Pipeline',
    intro: 'Phase deadlines, heartbeats and the reconciler (docs/api.md, Statuses).',
    settings: pipelineSettings,
  },
  { title: 'Outbound webhooks', settings: webhookSettings },
  { title: 'Retention', settings: retentionSettings },
  { title: 'Runtime', settings: runtimeSettings },
  {
    title: 'Edge',
    intro: 'The one entry point for every cloud-hosted deployment, by name (docs/operations.md, The edge).',
    settings: edgeSettings,
  },
  { title: 'Custom domains', intro: 'docs/api.md, Domains.', settings: domainSettings },
  {
    title: 'Sandbox',
    intro: 'docs/operations.md, Sandbox, explains the isolation these tune.',
    settings: sandboxSettings,
  },
  {
    title: 'Quotas and ceilings',
    intro: 'Quotas are per-workspace defaults, overridable per workspace (docs/operations.md, Quotas and retention).',
    settings: { quotaSettings, ceilingSettings },
  },
  { title: 'Image registry', intro: 'docs/operations.md, The image registry.', settings: registrySettings },
];

export const AGENT_CHAPTER: Chapter = {
  title: 'Listener agent',
  intro: 'The listener agent runs in your cluster and reads only these (it shares nothing with the control plane).',
  settings: agentSettings,
};

const code = (value: unknown) => `\`${String(value)}\``;

interface Described {
  type: string;
  flags?: { default?: unknown; presence?: string; only?: boolean };
  allow?: unknown[];
  rules?: Array<{ name: string; args?: { limit?: number; options?: { scheme?: string[] } } }>;
}

function defaultOf(s: Setting<unknown>, d: Described): string {
  if (s.shown) return s.shown;
  if (d.flags?.presence === 'required') return 'required';
  const fallback = d.flags?.default;
  return fallback === undefined || fallback === '' ? '—' : code(fallback);
}

function valuesOf(d: Described): string {
  if (d.flags?.only && d.allow) return d.allow.map(code).join(', ');
  const rule = (name: string) => d.rules?.find((r) => r.name === name);
  if (d.type === 'number') {
    const [min, max] = [rule('min')?.args?.limit, rule('max')?.args?.limit];
    const kind = rule('integer') ? 'integer' : 'number';
    if (min !== undefined && max !== undefined) return `${kind} ${min}–${max}`;
    if (min !== undefined) return `${kind} ≥ ${min}`;
    return max !== undefined ? `${kind} ≤ ${max}` : kind;
  }
  const schemes = rule('uri')?.args?.options?.scheme;
  if (schemes) return `URL (${schemes.join(', ')})`;
  return rule('uri') ? 'URL' : d.type;
}

function row(s: Setting<unknown>): string {
  const d = (s.rule as Joi.Schema).describe() as Described;
  const cells = [code(s.env), defaultOf(s, d), valuesOf(d), s.doc].map((cell) => cell.replaceAll('|', '\\|'));
  return `| ${cells.join(' | ')} |`;
}

function chapter({ title, intro, settings }: Chapter): string {
  return [
    `## ${title}`,
    '',
    ...(intro ? [intro, ''] : []),
    '| variable | default | values | meaning |',
    '|---|---|---|---|',
    ...settingsOf(settings).map(row),
    '',
  ].join('\n');
}

/** The whole of docs/configuration.md. */
export function configurationReference(): string {
  return [
    '# Configuration',
    '',
    '<!-- Generated from libs/config/src (each setting is declared once there); `pnpm docs:configuration` rewrites this file. -->',
    '',
    'All configuration is environment variables, parsed once at start by one joi schema; a bad value',
    'stops the process with every problem listed (exit code 2). An empty variable counts as unset.',
    'In production set at least `NODE_ENV=production`, `DATABASE_URL`, `REDIS_URL`, `SLIPWAY_SECRETS_KEY`,',
    '`SLIPWAY_PUBLIC_URL`, `SLIPWAY_TRUST_PROXY` and `HOST=0.0.0.0` in containers',
    '([operations](operations.md#configuration)). The listener agent reads only the variables of its',
    'own chapter, at the end.',
    '',
    ...[...CONTROL_PLANE_CHAPTERS, AGENT_CHAPTER].map(chapter),
  ].join('\n');
}
