#!/usr/bin/env node
// A stand-in for the `docker` CLI, for what cannot exist on this machine: a Docker engine.
// It does only what `langgraphjs deploy` asks of docker, and does the registry part for real:
//   info, pull                      → succeed (nothing is pulled)
//   build -f - -t <tag> <dir> …     → "builds" the OCI layout in $DOCKER_STAND_IN_LAYOUT (the Dockerfile is read and ignored)
//   [--config <dir>] login -u <user> --password-stdin <host>
//                                   → the real exchange: GET /v2/ on the registry, then its token realm with Basic credentials
//   tag <source> <target>           → records the alias
//   [--config <dir>] push <image>   → skopeo copy to the registry with the credentials of <dir>/config.json
//   image inspect --format {{json .RepoDigests}} <image>
//                                   → the digests pushes recorded
// State (tags and digests) is kept in $DOCKER_STAND_IN_STATE.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

const stateFile = process.env.DOCKER_STAND_IN_STATE;
const layout = process.env.DOCKER_STAND_IN_LAYOUT;
const state = existsSync(stateFile) ? JSON.parse(readFileSync(stateFile, 'utf8')) : { images: {} };
const save = () => writeFileSync(stateFile, JSON.stringify(state));
const fail = (message) => {
  process.stderr.write(`${message}\n`);
  process.exit(1);
};
const readStdin = () => {
  try {
    return readFileSync(0, 'utf8');
  } catch {
    return '';
  }
};

let args = process.argv.slice(2);
let configDir = null;
if (args[0] === '--config') {
  configDir = args[1];
  args = args.slice(2);
}
const [command, ...rest] = args;

switch (command) {
  case 'info':
  case 'pull':
    process.exit(0);
    break;
  case 'build': {
    readStdin();
    const tag = rest[rest.indexOf('-t') + 1];
    state.images[tag] = { layout, repoDigests: [] };
    save();
    break;
  }
  case 'login': {
    const host = rest.at(-1);
    const user = rest[rest.indexOf('-u') + 1];
    const password = readStdin().trim();
    const challenge = await fetch(`http://${host}/v2/`);
    const header = challenge.headers.get('www-authenticate') ?? '';
    const realm = /realm="([^"]+)"/.exec(header)?.[1];
    const service = /service="([^"]+)"/.exec(header)?.[1];
    if (challenge.status !== 401 || !realm)
      fail(`Error response from daemon: ${host} did not ask for a token (${challenge.status})`);
    const token = await fetch(
      `${realm}?service=${encodeURIComponent(service ?? '')}&account=${encodeURIComponent(user)}`,
      {
        headers: { authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}` },
      },
    );
    if (!token.ok)
      fail(
        `Error response from daemon: login attempt to http://${host}/v2/ failed with status: ${token.status} ${await token.text()}`,
      );
    process.stdout.write('Login Succeeded\n');
    break;
  }
  case 'tag': {
    const [source, target] = rest;
    if (!state.images[source]) fail(`Error response from daemon: No such image: ${source}`);
    state.images[target] = { ...state.images[source], repoDigests: [] };
    save();
    break;
  }
  case 'push': {
    const image = rest.at(-1);
    const entry = state.images[image];
    if (!entry) fail(`An image does not exist locally with the tag: ${image}`);
    const host = image.split('/')[0];
    const auths = configDir ? (JSON.parse(readFileSync(path.join(configDir, 'config.json'), 'utf8')).auths ?? {}) : {};
    const auth = auths[host]?.auth ? Buffer.from(auths[host].auth, 'base64').toString() : null;
    const digestFile = `${stateFile}.digest`;
    try {
      execFileSync(
        'skopeo',
        [
          'copy',
          '--preserve-digests',
          '--dest-tls-verify=false',
          '--digestfile',
          digestFile,
          ...(auth ? ['--dest-creds', auth] : ['--dest-no-creds']),
          `oci:${entry.layout}:latest`,
          `docker://${image}`,
        ],
        { stdio: ['ignore', 'inherit', 'inherit'] },
      );
    } catch {
      fail(`denied: pushing ${image} failed`);
    }
    const digest = readFileSync(digestFile, 'utf8').trim();
    entry.repoDigests = [`${image.slice(0, image.lastIndexOf(':'))}@${digest}`];
    save();
    process.stdout.write(`latest: digest: ${digest}\n`);
    break;
  }
  case 'image': {
    if (rest[0] !== 'inspect') fail(`docker stand-in: unsupported image ${rest[0]}`);
    const entry = state.images[rest.at(-1)];
    if (!entry) fail(`Error: No such image: ${rest.at(-1)}`);
    process.stdout.write(`${JSON.stringify(entry.repoDigests)}\n`);
    break;
  }
  default:
    fail(`docker stand-in: unsupported command ${args.join(' ')}`);
}
