import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * LangGraph.js projects as files: written into a directory (writeProject) or committed to a
 * local git repository (commitProject). How they are deployed is agent-projects.ts's.
 */

/** Runs git in `dir` with a fixed identity; returns trimmed stdout. */
export const gitIn = (dir: string, ...args: string[]) =>
  execFileSync('git', ['-C', dir, '-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args], {
    encoding: 'utf8',
  }).trim();

/** The text of `file` in test/fixtures/agent-server. */
export const agentFixture = (file: string) =>
  readFileSync(fileURLToPath(new URL(`../fixtures/agent-server/${file}`, import.meta.url)), 'utf8');

/** A project's lockfile, and its package.json's dependencies read from it (the two always agree). */
const PROJECT_LOCKFILE = agentFixture('package-lock.json');
const PROJECT_DEPENDENCIES: Record<string, string> = JSON.parse(PROJECT_LOCKFILE).packages[''].dependencies;

/** A LangGraph.js project: its files (paths in it → text, over writeProject's) and its graph config's `env` and other keys. */
export interface AgentProject {
  name: string;
  files: Record<string, string>;
  env?: Record<string, string>;
  config?: Record<string, unknown>;
}

/**
 * A LangGraph.js project `name` in `dir`: package.json with the fixture lockfile's
 * dependencies, that lockfile, and langgraph.json naming the graph `agent` as
 * ./src/agent.ts:graph (not written here), with `env` and the keys of `config`. The lockfile
 * makes a redeploy of a code change reuse the first build's installed dependencies, as a
 * project locked like most real ones does.
 */
function writeProjectBase(
  dir: string,
  name: string,
  env?: Record<string, string>,
  config: Record<string, unknown> = {},
) {
  mkdirSync(path.join(dir, 'src'), { recursive: true });
  writeFileSync(
    path.join(dir, 'package.json'),
    JSON.stringify({ name, private: true, type: 'module', dependencies: PROJECT_DEPENDENCIES }),
  );
  writeFileSync(path.join(dir, 'package-lock.json'), PROJECT_LOCKFILE);
  writeFileSync(
    path.join(dir, 'langgraph.json'),
    JSON.stringify({
      node_version: process.versions.node.split('.')[0],
      graphs: { agent: './src/agent.ts:graph' },
      dependencies: ['.'],
      ...(env ? { env } : {}),
      ...config,
    }),
  );
}

/** A git repository `name` under `reposRoot` holding writeProjectBase's files, not committed yet. */
export function initProject(
  reposRoot: string,
  name: string,
  env?: Record<string, string>,
  config: Record<string, unknown> = {},
): string {
  const dir = path.join(reposRoot, name);
  execFileSync('git', ['init', '-q', '-b', 'main', dir]);
  writeProjectBase(dir, name, env, config);
  return dir;
}

/** Writes `project` into `dir`. A package.json of its own goes without the fixture lockfile. */
export function writeProject(dir: string, project: AgentProject): void {
  writeProjectBase(dir, project.name, project.env, project.config);
  if ('package.json' in project.files) rmSync(path.join(dir, 'package-lock.json'));
  for (const [file, text] of Object.entries(project.files)) {
    mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    writeFileSync(path.join(dir, file), text);
  }
}

/** Writes `project` as the repository `project.name` under `reposRoot` and commits it; returns its directory. */
export function commitProject(reposRoot: string, project: AgentProject): string {
  const dir = path.join(reposRoot, project.name);
  execFileSync('git', ['init', '-q', '-b', 'main', dir]);
  writeProject(dir, project);
  gitIn(dir, 'add', '-A');
  gitIn(dir, 'commit', '-q', '-m', `project ${project.name}`);
  return dir;
}
