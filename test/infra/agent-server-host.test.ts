import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import {
  AGENT_SERVER_HOST_DIR,
  AGENT_SERVER_HOST_ENTRY,
  copyAgentServerHost,
} from '../../services/builder/src/agent-server-host.js';
import { writeAgentArtifact } from '../support/agent-server-host.js';

/**
 * The agent server host (services/agent-server) is TypeScript. The builder compiles it into
 * each agent-server artifact with a transpile that does not check types, so its types are
 * checked here, against its own locked dependencies, as `pnpm typecheck:agent-server` does; and
 * its copy in an artifact holds compiled modules only, the entry the start command names among
 * them. (A deploy that runs the compiled host end to end: test/e2e/agent-server*.test.ts.)
 * The suite's pre-built agent artifacts (writeAgentArtifact) resolve a project's packages from
 * the host's install: only while the versions agree is that what a build would install.
 */
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const HOST_SRC = path.join(ROOT, 'services/agent-server/src');
const scratch = mkdtempSync(path.join(tmpdir(), 'slipway-host-copy-'));

afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe('the agent server host', () => {
  it('type-checks against its locked dependencies', () => {
    execFileSync('pnpm', ['typecheck:agent-server'], { cwd: ROOT, stdio: 'pipe', timeout: 300_000 });
  }, 320_000);

  it('is copied into an artifact compiled: one ES module per source module, no TypeScript, no node_modules', async () => {
    const dir = await copyAgentServerHost(scratch);
    expect(dir).toBe(path.join(scratch, AGENT_SERVER_HOST_DIR));
    const sources = readdirSync(HOST_SRC).filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'));
    const compiled = readdirSync(path.join(dir, 'dist'));
    expect(compiled.sort()).toEqual(sources.map((f) => f.replace(/\.ts$/, '.js')).sort());
    expect(existsSync(path.join(dir, AGENT_SERVER_HOST_ENTRY))).toBe(true);
    expect(existsSync(path.join(dir, 'src'))).toBe(false);
    expect(existsSync(path.join(dir, 'node_modules'))).toBe(false);
    expect(existsSync(path.join(dir, 'package-lock.json'))).toBe(true);
    // Type annotations are gone and relative imports name the compiled modules.
    const entry = readFileSync(path.join(dir, AGENT_SERVER_HOST_ENTRY), 'utf8');
    expect(entry).toMatch(/import\(["']\.\/main\.js["']\)/);
    expect(entry).not.toMatch(/interface GraphConfig/);
    execFileSync(process.execPath, ['--check', path.join(dir, 'dist/main.js')]);
  });

  it("locks the fixture projects' dependencies at the versions the fixture lockfile does", () => {
    const host = JSON.parse(readFileSync(path.join(ROOT, 'services/agent-server/package-lock.json'), 'utf8'));
    const fixture = JSON.parse(readFileSync(path.join(ROOT, 'test/fixtures/agent-server/package-lock.json'), 'utf8'));
    const wanted: Record<string, string> = fixture.packages[''].dependencies;
    expect(Object.keys(wanted).length).toBeGreaterThan(0);
    for (const name of Object.keys(wanted)) {
      expect(host.packages[`node_modules/${name}`]?.version, name).toBe(
        fixture.packages[`node_modules/${name}`].version,
      );
    }
  });

  it('is not pre-built for a project that wants a version the host does not lock', async () => {
    const project = {
      name: 'unlocked-agent',
      files: { 'package.json': JSON.stringify({ name: 'unlocked-agent', dependencies: { zod: '3.0.0' } }) },
    };
    await expect(writeAgentArtifact(scratch, 'r1', project)).rejects.toThrow(/wants zod 3\.0\.0, the host locks \d/);
  });
});
