import type Joi from 'joi';
import { ConfigError } from './config-error.js';

/** Validates an environment against a schema, empty variables counting as unset; every problem at once. */
export function validateEnvironment(against: Joi.ObjectSchema, env: NodeJS.ProcessEnv): Record<string, unknown> {
  // An empty variable means unset: compose files and shells pass `FOO=` for "no value".
  const present = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const { value, error } = against.validate(present, { abortEarly: false, convert: true });
  if (error) throw new ConfigError(error.details.map((d) => d.message));
  return value;
}
