// End-to-end test of `cordon mcp --pool 1` with the official MCP TypeScript
// SDK client: once the offline pool holds a ready container (seen in
// Docker: the server's pid, session label "pool", its one exec waiting),
// run_code runs in exactly that container (result "warm": true and its
// name), which is removed after the answer and never used again; when the
// client closes (stdin EOF, as the SDK does) nothing with the server's pid
// is left. Fails (never skips) when node_modules, Docker, the runtime or
// the image is missing, unless CORDON_E2E=skip (then exit 77).
import { check, checkCount, cordon, docker, serverPids, sh } from './lib.mjs';

const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
const { StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const transport = new StdioClientTransport({
  command: cordon, args: ['mcp', '--pool', '1'], env: { ...process.env }, stderr: 'pipe',
});
let stderr = '';
transport.stderr.on('data', (b) => { stderr += b.toString(); });
const client = new Client({ name: 'cordon-e2e-pool', version: '1.0.0' });
await client.connect(transport);
const serverPid = transport.pid;
serverPids.push(serverPid);
const ours = (extra) => (sh(docker, ['ps', '-a', '--filter', 'label=cordon=1', '--filter',
  `label=cordon.owner_pid=${serverPid}`, ...extra, '--format', '{{.Names}}']) ?? '')
  .split('\n').filter(Boolean);
// An offline pool container that is running and whose one exec (the job's
// python, waiting for its program) the daemon knows.
function readyPooled() {
  for (const name of ours(['--filter', 'label=cordon.session=pool', '--filter', 'network=none',
    '--filter', 'status=running'])) {
    const execs = sh(docker, ['inspect', '-f', '{{len .ExecIDs}}', name]);
    if (execs !== null && execs.trim() === '1')
      return name;
  }
  return null;
}
const run = async (code) => {
  const r = await client.callTool({ name: 'run_code', arguments: { code } });
  check(r.isError === false, `run_code ${JSON.stringify(code)} is not an error`, r);
  return r.structuredContent;
};

// A first call: cold or warm, it also refreshes a stale probe record (the
// pool keeps containers only while its mode's probe passes).
let d = await run('print(1)');
check(d.status === 'ok' && d.stdout === '1\n', 'a first call runs', d);
let warm1 = null;
for (let i = 0; i < 1200 && warm1 === null; i++) {
  warm1 = readyPooled();
  if (warm1 === null)
    await sleep(100);
}
check(warm1 !== null, 'the pool holds a ready offline container with the server\'s pid',
  ours([]));
// The pool lists an entry once its exec is spawned, before the daemon
// knows the exec: a little margin.
await sleep(300);
d = await run('print(6*7)');
check(d.status === 'ok' && d.stdout === '42\n', 'the warm call prints 42', d);
check(d.warm === true && d.container === warm1,
  `the call ran warm, in the pooled container ${warm1}`, d);
check(d.timing_ms.start >= 0 && d.timing_ms.start < 100,
  'its start was the take from the pool (timing_ms.start < 100 ms)', d.timing_ms);
let gone = false;
for (let i = 0; i < 100 && !gone; i++, await sleep(100))
  gone = !ours([]).includes(warm1);
check(gone, 'the taken container is removed after the answer', ours([]));
d = await run('print(2)');
check(d.container !== warm1, 'a later call never gets the same container', d);

// The client closes as the SDK does: stdin EOF (SIGTERM after 2 s, SIGKILL
// after 4 s). The server stops its pool and sweeps by its pid first.
const t0 = Date.now();
await client.close();
const closeMs = Date.now() - t0;
let alive = true;
for (let i = 0; i < 50 && alive; i++, await sleep(100)) {
  try { process.kill(serverPid, 0); } catch { alive = false; }
}
check(!alive, 'the server exited after stdin EOF');
check(ours([]).length === 0, `no container with the server's pid is left (close ${closeMs} ms)`,
  ours([]));
check(!/leftover/.test(stderr), 'the server found no leftover of its own', stderr);
check(!/AddressSanitizer|runtime error|LeakSanitizer/.test(stderr),
  'the server logged no sanitizer report', stderr);
console.log(`PASS: ${checkCount()} checks`);
