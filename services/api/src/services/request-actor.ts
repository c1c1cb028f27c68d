import { AsyncLocalStorage } from 'node:async_hooks';
import { systemActor, type RevisionActor } from '@slipway/domain';
import type { Principal } from '../auth/principal.js';

/**
 * Who the request being handled acts for, for what it records (a revision's `created_by`): set
 * around each route's handler (mountRoutes), read where a revision is made, so the caller's
 * identity need not be passed through every service method between the two. Outside a request
 * (workers, signed webhooks: no principal) it is Slipway itself.
 */
const current = new AsyncLocalStorage<RevisionActor>();

/** The actor of a principal: an API key by its id and description, a user by its subject. */
export function actorOf(principal: Principal | null): RevisionActor | null {
  if (!principal) return null;
  if (principal.kind === 'api_key') return { kind: 'api_key', id: principal.keyId, name: principal.name };
  return { kind: 'user', id: principal.subject, name: principal.name };
}

/** Runs `fn` as `actor` (null: as nobody in particular, which reads as Slipway). */
export function actingAs<T>(actor: RevisionActor | null, fn: () => T): T {
  return actor ? current.run(actor, fn) : fn();
}

/** The actor of the request being handled, else `fallback` (Slipway, saying what set it off). */
export function currentActor(fallback: RevisionActor = systemActor('slipway')): RevisionActor {
  return current.getStore() ?? fallback;
}
