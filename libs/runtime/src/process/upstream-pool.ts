import { Agent } from 'node:http';
import type { ProxyTarget } from './forwarding.js';

/** How long an idle keep-alive socket to an upstream is kept (under Node's default server keep-alive of 5 s). */
const IDLE_SOCKET_MS = 4_000;

/** A target with its own keep-alive pool, made once per target and reused by every request to it. */
export interface Upstream {
  target: ProxyTarget;
  key: string;
  agent: Agent;
}

/**
 * The upstreams of one destination, picked round robin. `setTargets` swaps the whole list at
 * once: a request picks its target when it arrives, so requests already forwarded finish where
 * they went and every later one goes to the new list — none sees a half-updated list.
 */
export class UpstreamPool {
  private targets: readonly Upstream[] = [];
  private listed: readonly ProxyTarget[] = [];
  private next = 0;
  /** One keep-alive pool per target, so a retired target's sockets can be dropped as a unit. */
  private readonly agents = new Map<string, Agent>();

  get current(): readonly ProxyTarget[] {
    return this.listed;
  }

  /** Replaces the target list atomically. Pools of targets no longer listed lose their idle sockets. */
  setTargets(targets: readonly ProxyTarget[]): void {
    this.listed = Object.freeze(targets.map((t) => ({ host: t.host, port: t.port })));
    this.targets = Object.freeze(
      this.listed.map((target) => ({ target, key: key(target), agent: this.agentFor(key(target)) })),
    );
    const keep = new Set(this.targets.map((u) => u.key));
    for (const [k, agent] of this.agents) {
      if (keep.has(k)) continue;
      // Busy sockets finish their request (the drain); idle ones would only go stale.
      for (const list of Object.values(agent.freeSockets)) for (const s of list ?? []) s.destroy();
      this.agents.delete(k);
      // Requests in flight keep a reference to the agent; it is garbage once they end.
      setTimeout(() => agent.destroy(), 60_000).unref();
    }
  }

  /** Drops every keep-alive socket (the destination is gone). */
  destroy(): void {
    for (const agent of this.agents.values()) agent.destroy();
    this.agents.clear();
    this.targets = [];
    this.listed = [];
  }

  pick(exclude?: Upstream): Upstream | null {
    const list = this.targets;
    if (!list.length) return null;
    for (let i = 0; i < list.length; i++) {
      const u = list[this.next++ % list.length]!;
      if (!exclude || u.key !== exclude.key || list.length === 1) return u;
    }
    return list[0]!;
  }

  /**
   * The keep-alive pool of a target, made when it is first listed (Nagle off: a proxy forwards
   * what it has at once). An idle socket is closed after IDLE_SOCKET_MS, before a Node server
   * behind (5 s by default) closes it: a request written onto a socket the server is closing
   * fails, and one with a body cannot be retried.
   */
  private agentFor(k: string): Agent {
    let agent = this.agents.get(k);
    if (!agent) {
      agent = new Agent({
        keepAlive: true,
        keepAliveMsecs: 1_000,
        scheduling: 'lifo',
        noDelay: true,
        timeout: IDLE_SOCKET_MS,
      } as ConstructorParameters<typeof Agent>[0]);
      this.agents.set(k, agent);
    }
    return agent;
  }
}

/** Told of an upstream that did not answer (a warning; never request contents). */
export type UpstreamError = (err: Error, target: ProxyTarget | null) => void;

function key(t: ProxyTarget): string {
  return `${t.host}:${t.port}`;
}
