/**
 * `tsx bench/support/profile-summary.ts <file.cpuprofile> [top] [from-s to-s]`: where a CPU
 * profile's time went, as self time per function and per package (node_modules package, our
 * lib/service, or node internals), so a profile can be read without DevTools. It first prints how
 * busy the process was in each second of the profile: a bench profile spans the whole run (the
 * baseline's load, when the api idles, included), so pass the seconds of the load you want read.
 * Last, total time per function (itself and what it called): where a request's time goes by
 * stage (the route's handler, validation, the access log, the outbox relay).
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

const [file, topArg, fromArg, toArg] = process.argv.slice(2);
if (!file) throw new Error('usage: profile-summary <file.cpuprofile> [top] [from-s to-s]');
const top = Number(topArg ?? 25);
const [from, to] = [Number(fromArg ?? 0), Number(toArg ?? Infinity)];
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parentOf = new Map<number, number>();
for (const n of profile.nodes) for (const child of n.children ?? []) parentOf.set(child, n.id);
const self = new Map<number, number>();
const busy: Array<{ busy: number; all: number }> = [];
let at = 0;
profile.samples.forEach((id, i) => {
  const dt = profile.timeDeltas[i] ?? 0;
  at += dt;
  const second = Math.floor(at / 1e6);
  busy[second] ??= { busy: 0, all: 0 };
  busy[second].all += dt;
  if (byId.get(id)!.callFrame.functionName !== '(idle)') busy[second].busy += dt;
  if (second >= from && second < to) self.set(id, (self.get(id) ?? 0) + dt);
});
const total = [...self.values()].reduce((a, b) => a + b, 0);
console.log(`busy per second: ${busy.map((b, i) => `${i}:${b ? Math.round((100 * b.busy) / b.all) : 0}`).join(' ')}\n`);

function owner(url: string): string {
  if (!url) return '(native/idle)';
  const nm = /node_modules\/(?:\.pnpm\/[^/]+\/node_modules\/)?((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (nm) return nm[1]!;
  if (url.startsWith('node:')) return 'node:' + url.slice(5).split('/')[0];
  if (url.includes('/dist/main.js')) return '(slipway bundle)';
  const ours = /\/(libs|services)\/([^/]+)\//.exec(url);
  return ours ? `${ours[1]}/${ours[2]}` : url;
}

function nameOf(id: number): string {
  const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
  return `${functionName || '(anonymous)'} ${owner(url)}:${lineNumber + 1}`;
}

const fns = new Map<string, number>();
const pkgs = new Map<string, number>();
for (const [id, t] of self) {
  const f = nameOf(id);
  fns.set(f, (fns.get(f) ?? 0) + t);
  const p = owner(byId.get(id)!.callFrame.url);
  pkgs.set(p, (pkgs.get(p) ?? 0) + t);
}
const pct = (t: number) => `${((100 * t) / total).toFixed(1).padStart(5)} %`;
console.log(
  `sampled: ${(total / 1e6).toFixed(1)} s${Number.isFinite(to) || from ? ` (seconds ${from} to ${to})` : ''}\n\nby package (self time):`,
);
for (const [p, t] of [...pkgs].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${pct(t)}  ${p}`);
console.log('\nby function (self time):');
for (const [f, t] of [...fns].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${pct(t)}  ${f}`);

// Total time: each sample counts once for every function on its stack (a recursive one once).
const totals = new Map<string, number>();
for (const [id, t] of self) {
  const seen = new Set<string>();
  for (let at: number | undefined = id; at !== undefined; at = parentOf.get(at)) seen.add(nameOf(at));
  for (const f of seen) totals.set(f, (totals.get(f) ?? 0) + t);
}
console.log('\nby function (total time, with what it called):');
for (const [f, t] of [...totals].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${pct(t)}  ${f}`);
