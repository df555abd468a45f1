// What the MCP SDK end-to-end tests (test.mjs, pool.mjs) share: failing
// (never skipping, unless CORDON_E2E=skip: exit 77) when node_modules,
// Docker, the runtime or the image is missing; the servers to stop on a
// failure; the built cordon; and numbered checks.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const here = dirname(fileURLToPath(import.meta.url));

// Servers started by the test: SIGTERM on a failure makes each cancel a
// running call (removing its container).
export const serverPids = [];
export function fail(msg) {
  console.error(`FAIL: ${msg}`);
  for (const pid of serverPids) {
    try { process.kill(pid, 'SIGTERM'); } catch { /* gone */ }
  }
  process.exit(1);
}

export function missing(msg) {
  if (process.env.CORDON_E2E === 'skip') {
    console.log(`SKIP (CORDON_E2E=skip): ${msg}`);
    process.exit(77);
  }
  fail(`${msg} (run scripts/setup and 'cordon image build'; set CORDON_E2E=skip only on a laptop)`);
}

// node_modules must be there and match the pinned versions.
const pkg = JSON.parse(readFileSync(join(here, 'package.json'), 'utf8'));
for (const [name, want] of Object.entries(pkg.dependencies)) {
  const p = join(here, 'node_modules', name, 'package.json');
  if (!existsSync(p))
    fail(`${name} is not installed in tests/mcp/client/node_modules: run scripts/npm-deps (npm ci --prefix tests/mcp/client)`);
  const got = JSON.parse(readFileSync(p, 'utf8')).version;
  if (got !== want)
    fail(`${name} ${got} is installed but package.json pins ${want}: run scripts/npm-deps`);
}

export const cordon = process.env.CORDON_BIN;
if (!cordon || !existsSync(cordon))
  fail(`CORDON_BIN is not set to the built cordon binary (got '${cordon ?? ''}')`);

// A command's stdout, or null when it fails.
export function sh(cmd, args) {
  try {
    return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch {
    return null;
  }
}

// The sandbox must really be there: the same checks as tests/e2e/smoke.sh.
// Debian's docker CLI (matching its daemon) when present, as the runner does.
export const docker = existsSync('/usr/bin/docker') ? '/usr/bin/docker' : 'docker';
if (sh(docker, ['version', '--format', '{{.Client.Version}}']) === null)
  missing('no docker CLI');
if (sh(docker, ['info', '--format', '{{.ServerVersion}}']) === null)
  missing('dockerd is not answering');
if (!(sh(docker, ['info', '--format', '{{json .Runtimes}}']) ?? '').includes('"cordon-offline"'))
  missing('runtime cordon-offline is not registered with dockerd');
if (!/"id":"sha256:[0-9a-f]+"/.test(sh(cordon, ['image', 'show']) ?? ''))
  missing('no pinned sandbox image');

// Numbered checks, each with the seconds since the test started; the first
// that fails ends the test with its detail.
let checks = 0;
const started = Date.now();
export function check(cond, msg, detail) {
  if (!cond)
    fail(`${msg}${detail === undefined ? '' : `: ${JSON.stringify(detail)}`}`);
  checks++;
  console.log(`ok ${checks} - ${msg} (${((Date.now() - started) / 1000).toFixed(1)} s)`);
}
export const checkCount = () => checks;
