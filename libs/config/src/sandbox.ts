/**
 * The sandbox of builds and apps and the operator's resource ceilings (docs/operations.md,
 * Sandbox): the part of the one environment schema about them, and what it becomes in Config.
 */
import { isIP } from 'node:net';
import Joi from 'joi';
import type { ResourceCeilings } from '@slipway/domain';
import { listOf } from './lists.js';

export interface SandboxSettings {
  /** `auto`: on wherever it can be set up (production refuses to start without); `off`: opt-out. */
  mode: 'auto' | 'off';
  uidMin: number;
  uidMax: number;
  pidsMax: number;
  openFiles: number;
  defaultMemoryMb: number;
  /** The IPv4 pool of the sandboxes' network namespaces (a /30 each). */
  subnet: string;
  /** Addresses sandboxes may reach although private (checked before the default-deny). */
  allowCidrs: string[];
  /** Limits of every build step (its cgroup) and the disk quota of a build's directory and npm cache. */
  build: { memoryMb: number; cpu: number; pidsMax: number; diskMb: number };
}

function isIpv4Cidr(value: string, min: number, max: number): boolean {
  const [ip, prefix = '32', ...rest] = value.trim().split('/');
  return isIP(ip!) === 4 && !rest.length && /^\d{1,2}$/.test(prefix) && Number(prefix) >= min && Number(prefix) <= max;
}

export const sandboxSchemaKeys = {
  SLIPWAY_SANDBOX: Joi.string().valid('auto', 'off').default('auto'),
  SLIPWAY_SANDBOX_UID_MIN: Joi.number().integer().min(1000).max(4_294_967_294).default(200_000),
  SLIPWAY_SANDBOX_UID_MAX: Joi.number().integer().min(1000).max(4_294_967_294).default(265_535),
  SLIPWAY_SANDBOX_PIDS_MAX: Joi.number().integer().min(16).default(512),
  SLIPWAY_SANDBOX_OPEN_FILES: Joi.number().integer().min(64).default(4096),
  SLIPWAY_SANDBOX_DEFAULT_MEMORY_MB: Joi.number().integer().min(16).default(1024),
  SLIPWAY_SANDBOX_SUBNET: Joi.string()
    .default('10.213.0.0/16')
    .custom((value: string, helpers) => (isIpv4Cidr(value, 8, 29) ? value : helpers.error('subnet.invalid')))
    .messages({ 'subnet.invalid': '{{#label}} must be an IPv4 CIDR with a prefix of 8 to 29 (e.g. 10.213.0.0/16)' }),
  SLIPWAY_SANDBOX_ALLOW_CIDRS: Joi.string()
    .allow('')
    .default('')
    .custom((value: string, helpers) => (listOf(value).every((c) => isIpv4Cidr(c, 0, 32)) ? value : helpers.error('cidrs.invalid')))
    .messages({ 'cidrs.invalid': '{{#label}} must be a comma-separated list of IPv4 CIDRs (sandboxes have no IPv6 route)' }),
  SLIPWAY_BUILD_MEMORY_MB: Joi.number().integer().min(64).default(4096),
  SLIPWAY_BUILD_CPU: Joi.number().min(0).default(2),
  SLIPWAY_BUILD_PIDS_MAX: Joi.number().integer().min(16).default(1024),
  SLIPWAY_BUILD_DISK_MB: Joi.number().integer().min(16).default(4096),
  SLIPWAY_MAX_MEMORY_MB: Joi.number().integer().min(64).default(16_384),
  SLIPWAY_MAX_CPU: Joi.number().min(0.1).default(8),
  SLIPWAY_MAX_DISK_GI: Joi.number().integer().min(1).default(100),
  SLIPWAY_MAX_DB_CONNECTIONS: Joi.number().integer().min(1).default(500),
};

/** The validated environment's sandbox part as Config's `sandbox`. */
export function sandboxSettingsOf(value: Record<string, any>): SandboxSettings {
  return {
    mode: value.SLIPWAY_SANDBOX,
    uidMin: value.SLIPWAY_SANDBOX_UID_MIN,
    uidMax: Math.max(value.SLIPWAY_SANDBOX_UID_MIN, value.SLIPWAY_SANDBOX_UID_MAX),
    pidsMax: value.SLIPWAY_SANDBOX_PIDS_MAX,
    openFiles: value.SLIPWAY_SANDBOX_OPEN_FILES,
    defaultMemoryMb: value.SLIPWAY_SANDBOX_DEFAULT_MEMORY_MB,
    subnet: value.SLIPWAY_SANDBOX_SUBNET,
    allowCidrs: listOf(value.SLIPWAY_SANDBOX_ALLOW_CIDRS),
    build: {
      memoryMb: value.SLIPWAY_BUILD_MEMORY_MB,
      cpu: value.SLIPWAY_BUILD_CPU,
      pidsMax: value.SLIPWAY_BUILD_PIDS_MAX,
      diskMb: value.SLIPWAY_BUILD_DISK_MB,
    },
  };
}

/** The validated environment's ceilings as Config's `ceilings`. */
export function ceilingsOf(value: Record<string, any>): ResourceCeilings {
  return {
    memoryMb: value.SLIPWAY_MAX_MEMORY_MB,
    cpu: value.SLIPWAY_MAX_CPU,
    diskGi: value.SLIPWAY_MAX_DISK_GI,
    dbConnections: value.SLIPWAY_MAX_DB_CONNECTIONS,
  };
}
