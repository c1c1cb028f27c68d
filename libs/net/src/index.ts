/**
 * Network edges: outbound HTTP to user-supplied URLs (repository hosts, webhook receivers), guarded against
 * server-side request forgery. See `guarded-fetch.ts` for the rules.
 */
export { addressRefusal, hostAllowed, type OutboundPolicy } from './address-policy.js';
export {
  checkOutboundUrl,
  guardedFetch,
  OutboundError,
  type GuardedFetchOptions,
  type GuardedResponse,
  type OutboundErrorCode,
} from './guarded-fetch.js';
export { answerClientErrors, answerSocket, serveWithin, type HttpBoundary } from './http-boundary.js';
export { listenExclusive, ServerLifecycle } from './listen.js';
