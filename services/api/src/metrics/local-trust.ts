import { activeFronts, probeLocalTrust, type LocalTrustReport } from '@slipway/runtime';

/** A probe result is reused this long: /readyz is polled often, the servers' auth rarely changes. */
const TTL_MS = 60_000;

/** What `/readyz` says about apps' access to the local stores (docs/architecture.md, Runtimes). */
export interface DataAccessView {
  postgres_passwordless: boolean | null;
  redis_default_user_open: boolean | null;
  fronts_active: { postgres: boolean; redis: boolean };
}

/**
 * Whether the local Postgres and Redis let any local process in without a password, probed the
 * way the deployer probes them at its start (same rule for which fronts it runs), so an operator
 * sees the weakness in `/readyz` details.
 */
export class LocalTrustCheck {
  private cached: { at: number; view: Promise<DataAccessView> } | null = null;

  constructor(
    private readonly databaseUrl: string,
    private readonly redisUrl: string,
  ) {}

  view(): Promise<DataAccessView> {
    if (!this.cached || Date.now() - this.cached.at > TTL_MS) {
      const view = probeLocalTrust(this.databaseUrl, this.redisUrl).then(toView);
      this.cached = { at: Date.now(), view };
    }
    return this.cached.view;
  }
}

function toView(report: LocalTrustReport): DataAccessView {
  return {
    postgres_passwordless: report.postgresPasswordless,
    redis_default_user_open: report.redisDefaultOpen,
    fronts_active: activeFronts(report),
  };
}
