import type { V1Pod } from '@kubernetes/client-node';
import { redactValues } from '@slipway/logging';
import type { Cluster } from './cluster.js';

export interface ShippedLine {
  revision_id: string;
  level: 'info';
  message: string;
}

/** At most this much of one container's log per poll. */
const LIMIT_BYTES = 256 * 1024;
/** At most this many lines per report (the control plane's bound). */
export const MAX_LINES_PER_REPORT = 500;

/** `2026-01-02T03:04:05.123Z` and `…05.123456789Z` compared exactly: [seconds text, nanoseconds]. */
function instant(ts: string): [string, number] {
  const [whole, fraction = ''] = ts.replace(/Z$/, '').split('.');
  return [whole!, Number(fraction.padEnd(9, '0').slice(0, 9))];
}
const after = (a: string, b: string) => {
  const [sa, na] = instant(a);
  const [sb, nb] = instant(b);
  return sa > sb || (sa === sb && na > nb);
};

/**
 * Ships the output of a revision's pods as its deploy log lines, once each. The log API reads
 * "since" with second precision, so each container keeps the timestamp of the last line
 * shipped and drops what it already sent. Every line is redacted with the deployment's secret
 * values before it leaves the cluster. Cursors advance only once the control plane took the
 * lines (`commit`), so an outage loses nothing.
 */
export class PodLogShipper {
  /** Per revision: `namespace/pod/container` → timestamp of the last line shipped. */
  private readonly cursors = new Map<string, Map<string, string>>();

  constructor(private readonly cluster: Cluster) {}

  async collect(
    namespace: string,
    revisionId: string,
    pods: V1Pod[],
    secretValues: readonly string[],
  ): Promise<{ lines: ShippedLine[]; commit: () => void }> {
    const lines: ShippedLine[] = [];
    const cursors = this.cursors.get(revisionId) ?? new Map<string, string>();
    const moved = new Map<string, string>();
    for (const pod of pods) {
      const podName = pod.metadata?.name;
      if (!podName) continue;
      for (const container of pod.spec?.containers ?? []) {
        if (lines.length >= MAX_LINES_PER_REPORT) break;
        const key = `${namespace}/${podName}/${container.name}`;
        const cursor = cursors.get(key);
        const sinceSeconds = cursor ? Math.max(1, Math.ceil((Date.now() - Date.parse(cursor)) / 1000) + 1) : undefined;
        const text = await this.cluster.podLog(namespace, podName, container.name, sinceSeconds, LIMIT_BYTES);
        if (!text) continue;
        let last = cursor;
        for (const raw of text.split('\n')) {
          const space = raw.indexOf(' ');
          if (space < 0) continue;
          const ts = raw.slice(0, space);
          if (last && !after(ts, last)) continue;
          if (lines.length >= MAX_LINES_PER_REPORT) break;
          lines.push({
            revision_id: revisionId,
            level: 'info',
            message: redactValues(`[${podName}/${container.name}] ${raw.slice(space + 1)}`, secretValues),
          });
          last = ts;
        }
        if (last && last !== cursor) moved.set(key, last);
      }
    }
    return {
      lines,
      commit: () => {
        moved.forEach((ts, key) => cursors.set(key, ts));
        this.cursors.set(revisionId, cursors);
      },
    };
  }

  /** Forgets revisions no longer rolling out. */
  retain(revisionIds: ReadonlySet<string>): void {
    for (const id of this.cursors.keys()) if (!revisionIds.has(id)) this.cursors.delete(id);
  }
}
