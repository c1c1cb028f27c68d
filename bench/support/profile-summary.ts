/**
 * `tsx bench/support/profile-summary.ts <file.cpuprofile> [top]`: where a CPU profile's time went,
 * as self time per function and per package (node_modules package, our lib/service, or node
 * internals), so a profile can be read without DevTools.
 */
import { readFileSync } from 'node:fs';

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: Node[];
  samples: number[];
  timeDeltas: number[];
}

const [file, topArg] = process.argv.slice(2);
if (!file) throw new Error('usage: profile-summary <file.cpuprofile> [top]');
const top = Number(topArg ?? 25);
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const self = new Map<number, number>();
profile.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
const total = [...self.values()].reduce((a, b) => a + b, 0);

function owner(url: string): string {
  if (!url) return '(native/idle)';
  const nm = /node_modules\/(?:\.pnpm\/[^/]+\/node_modules\/)?((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (nm) return nm[1]!;
  if (url.startsWith('node:')) return 'node:' + url.slice(5).split('/')[0];
  if (url.includes('/dist/main.js')) return '(slipway bundle)';
  const ours = /\/(libs|services)\/([^/]+)\//.exec(url);
  return ours ? `${ours[1]}/${ours[2]}` : url;
}

const fns = new Map<string, number>();
const pkgs = new Map<string, number>();
for (const [id, t] of self) {
  const n = byId.get(id)!;
  const f = `${n.callFrame.functionName || '(anonymous)'} ${owner(n.callFrame.url)}:${n.callFrame.lineNumber + 1}`;
  fns.set(f, (fns.get(f) ?? 0) + t);
  const p = owner(n.callFrame.url);
  pkgs.set(p, (pkgs.get(p) ?? 0) + t);
}
const pct = (t: number) => `${((100 * t) / total).toFixed(1).padStart(5)} %`;
console.log(`total sampled: ${(total / 1e6).toFixed(1)} s\n\nby package (self time):`);
for (const [p, t] of [...pkgs].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${pct(t)}  ${p}`);
console.log('\nby function (self time):');
for (const [f, t] of [...fns].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${pct(t)}  ${f}`);
