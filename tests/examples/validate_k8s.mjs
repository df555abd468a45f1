// Validation of examples/kubernetes/*.yaml (no cluster needed): every
// document parses and validates against the Kubernetes API's own schemas
// (kubernetes-models, generated from the Kubernetes OpenAPI spec), strictly:
// unknown fields, wrong types and missing required fields fail. Then the
// Cordon-specific checks: the sandbox Jobs carry
// the full hardening (gVisor RuntimeClass, non-root 65534, read-only root,
// drop ALL, no privilege escalation, RuntimeDefault seccomp, limits, a sized
// /tmp, no token, a deadline); the NetworkPolicies, taken together, let
// sandbox pods reach only the proxy pods on the proxy port (no DNS), and
// offline ones nothing. Uses the `yaml` and `kubernetes-models` packages
// installed by scripts/npm-deps (pinned in tests/mcp/client/package-lock.json).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const root = process.env.CORDON_SOURCE_ROOT ?? join(here, '..', '..');
const k8sDir = join(root, 'examples', 'kubernetes');
const modules = join(root, 'tests', 'mcp', 'client', 'node_modules');
const yamlPkg = join(modules, 'yaml', 'package.json');
const modelsDir = join(modules, 'kubernetes-models');

let failures = 0;
let checks = 0;
function check(cond, msg) {
  checks++;
  if (cond) {
    console.log(`ok ${checks} - ${msg}`);
  } else {
    failures++;
    console.log(`not ok ${checks} - ${msg}`);
  }
  return cond;
}

for (const pkg of [yamlPkg, join(modelsDir, 'package.json')]) {
  if (!existsSync(pkg)) {
    console.error(`FAIL: ${pkg} is missing: run scripts/npm-deps (npm ci --prefix tests/mcp/client)`);
    process.exit(1);
  }
}
const YAML = await import(join(dirname(yamlPkg), 'dist', 'index.js'));

// The kubernetes-models class for apiVersion/kind ("apps/v1" + "Deployment"
// is kubernetes-models/apps/v1/Deployment), or undefined.
async function modelFor(apiVersion, kind) {
  if (typeof apiVersion !== 'string' || typeof kind !== 'string' || !/^[A-Za-z0-9.\/]+$/.test(apiVersion) ||
      !/^[A-Za-z0-9]+$/.test(kind))
    return undefined;
  const file = join(modelsDir, apiVersion, `${kind}.mjs`);
  return existsSync(file) ? (await import(file))[kind] : undefined;
}

// kubernetes-models' validate() checks types, enums and required fields but,
// like the API's OpenAPI schemas, lets unknown fields through (the API server
// drops or rejects them at apply time). Its compiled validators read every
// field the schema knows (and every entry of map-typed fields), so the
// document is handed to it behind proxies that record each read: a field
// never read is a field the schema does not have.
function tracked(v, path, unread) {
  if (Array.isArray(v))
    return v.map((x, i) => tracked(x, `${path}[${i}]`, unread));
  if (v === null || typeof v !== 'object')
    return v;
  const read = new Set();
  const inner = Object.fromEntries(Object.entries(v).map(([k, x]) => [k, tracked(x, `${path}.${k}`, unread)]));
  unread.push(() => Object.keys(v).filter((k) => !read.has(k)).map((k) => `${path}.${k}`));
  return new Proxy(inner, {
    get(t, k, r) {
      if (typeof k === 'string')
        read.add(k);
      return Reflect.get(t, k, r);
    },
  });
}

// Validates one document against its schema; returns '' or what is wrong.
async function schemaErrors(doc) {
  const Model = await modelFor(doc?.apiVersion, doc?.kind);
  if (Model === undefined)
    return `no Kubernetes schema for apiVersion ${doc?.apiVersion} kind ${doc?.kind}`;
  const unread = [];
  try {
    Model.prototype.validate.call(tracked(JSON.parse(JSON.stringify(new Model(doc))), '', unread));
  } catch (e) {
    return e.message;
  }
  const unknown = unread.flatMap((f) => f());
  return unknown.length ? `unknown field(s) ${unknown.join(', ')}` : '';
}

const API = {
  Namespace: 'v1', ConfigMap: 'v1', Service: 'v1',
  RuntimeClass: 'node.k8s.io/v1', Deployment: 'apps/v1', Job: 'batch/v1',
  NetworkPolicy: 'networking.k8s.io/v1',
};
const CLUSTER_SCOPED = new Set(['Namespace', 'RuntimeClass']);

// Parse everything.
const docs = [];
const files = readdirSync(k8sDir).filter((f) => /\.ya?ml$/.test(f)).sort();
check(files.length > 0, `examples/kubernetes has YAML files (${files.join(', ')})`);
for (const f of files) {
  const parsed = YAML.parseAllDocuments(readFileSync(join(k8sDir, f), 'utf8'));
  for (const d of parsed) {
    if (!check(d.errors.length === 0, `${f}: document parses${d.errors.length ? `: ${d.errors[0].message}` : ''}`))
      continue;
    const o = d.toJS();
    if (o === null)
      continue;
    const err = await schemaErrors(o);
    check(err === '', `${f}: ${o.kind}/${o.metadata?.name} validates against the Kubernetes schema` +
      (err ? `: ${err}` : ''));
    o.__file = f;
    docs.push(o);
  }
}

// The schema check itself must catch a typo, a wrong type and a missing
// required field (planted in a copy of the first Job).
const planted = structuredClone(docs.find((o) => o.kind === 'Job') ?? {});
delete planted.__file;
const plantedCtr = planted.spec?.template?.spec?.containers?.[0];
if (check(plantedCtr !== undefined, 'a Job to plant mistakes in')) {
  const sc = plantedCtr.securityContext ?? {};
  const plants = {
    'readOnlyRootFileSystem (wrong case)': (c) => { c.securityContext = { ...sc, readOnlyRootFileSystem: true }; },
    'runAsUser as a string': (c) => { c.securityContext = { ...sc, runAsUser: '65534' }; },
    'a container without its required name': (c) => { delete c.name; },
  };
  for (const [what, plant] of Object.entries(plants)) {
    const copy = structuredClone(planted);
    plant(copy.spec.template.spec.containers[0]);
    const err = await schemaErrors(copy);
    check(err !== '', `the schema check refuses ${what}${err ? `: ${err}` : ''}`);
  }
}

for (const o of docs) {
  const where = `${o.__file}: ${o.kind}/${o.metadata?.name}`;
  check(typeof o.kind === 'string' && o.kind in API, `${where}: known kind`);
  check(o.apiVersion === API[o.kind], `${where}: apiVersion ${API[o.kind]}`);
  check(typeof o.metadata?.name === 'string' && o.metadata.name.length > 0, `${where}: metadata.name`);
  if (!CLUSTER_SCOPED.has(o.kind))
    check(o.metadata?.namespace === 'cordon', `${where}: in namespace cordon`);
}

const byKind = (k) => docs.filter((o) => o.kind === k);

// Label selectors (matchLabels + matchExpressions) against a label map.
function selects(sel, labels) {
  if (!sel)
    return false;
  for (const [k, v] of Object.entries(sel.matchLabels ?? {}))
    if (labels[k] !== v)
      return false;
  for (const e of sel.matchExpressions ?? []) {
    const has = e.key in labels;
    if (e.operator === 'In' && !(has && e.values.includes(labels[e.key]))) return false;
    if (e.operator === 'NotIn' && has && e.values.includes(labels[e.key])) return false;
    if (e.operator === 'Exists' && !has) return false;
    if (e.operator === 'DoesNotExist' && has) return false;
  }
  return true;
}

const ns = byKind('Namespace').find((o) => o.metadata.name === 'cordon');
check(ns?.metadata?.labels?.['pod-security.kubernetes.io/enforce'] === 'restricted',
  'namespace cordon enforces the restricted Pod Security profile');

const rc = byKind('RuntimeClass');
check(rc.length === 1 && rc[0].handler === 'runsc', 'one RuntimeClass, handler runsc');
const rcName = rc[0]?.metadata?.name;

// The proxy: Deployment, Service, allowlist ConfigMap.
const proxyDep = byKind('Deployment').find((o) => o.metadata.name === 'cordon-proxy');
const proxySvc = byKind('Service').find((o) => o.metadata.name === 'cordon-proxy');
check(proxyDep && proxySvc, 'the proxy Deployment and Service exist');
const proxyLabels = proxyDep?.spec?.template?.metadata?.labels ?? {};
check(selects(proxyDep?.spec?.selector, proxyLabels), 'the Deployment selects its own pods');
check(Object.entries(proxySvc?.spec?.selector ?? { x: 'y' }).every(([k, v]) => proxyLabels[k] === v),
  'the Service selects the proxy pods');
const proxyCtr = proxyDep?.spec?.template?.spec?.containers?.[0] ?? {};
const proxyPort = (proxyCtr.ports ?? []).find((p) => p.name === 'proxy')?.containerPort;
const svcPort = (proxySvc?.spec?.ports ?? [])[0] ?? {};
check(proxyPort !== undefined && (svcPort.targetPort === 'proxy' || svcPort.targetPort === proxyPort),
  `the Service targets the proxy container port (${proxyPort})`);
check((proxyCtr.args ?? []).join(' ').includes(`:${proxyPort}`), 'cordon-proxy listens on that port');
const alIdx = (proxyCtr.args ?? []).indexOf('--allowlist');
const alPath = alIdx >= 0 ? proxyCtr.args[alIdx + 1] : undefined;
const alMount = (proxyCtr.volumeMounts ?? []).find((m) => m.mountPath === alPath);
const alVol = (proxyDep?.spec?.template?.spec?.volumes ?? []).find((v) => v.name === alMount?.name);
const alCm = byKind('ConfigMap').find((o) => o.metadata.name === alVol?.configMap?.name);
check(alMount?.readOnly === true && alCm !== undefined,
  '--allowlist is a read-only mount of the allowlist ConfigMap');
check(typeof alCm?.data?.['default.list'] === 'string', 'the ConfigMap holds default.list');

// Hardening shared by every pod we ship (proxy and sandboxes).
function checkPodHardening(where, spec) {
  const psc = spec.securityContext ?? {};
  check(spec.automountServiceAccountToken === false, `${where}: automountServiceAccountToken false`);
  check(spec.hostNetwork !== true && spec.hostPID !== true && spec.hostIPC !== true,
    `${where}: no host namespaces`);
  check(psc.seccompProfile?.type === 'RuntimeDefault', `${where}: pod seccompProfile RuntimeDefault`);
  for (const c of [...(spec.initContainers ?? []), ...spec.containers]) {
    const sc = c.securityContext ?? {};
    const w = `${where}: container ${c.name}`;
    check((sc.runAsNonRoot ?? psc.runAsNonRoot) === true, `${w}: runAsNonRoot`);
    check((sc.runAsUser ?? psc.runAsUser) === 65534, `${w}: runAsUser 65534`);
    check(sc.readOnlyRootFilesystem === true, `${w}: readOnlyRootFilesystem`);
    check(sc.allowPrivilegeEscalation === false, `${w}: allowPrivilegeEscalation false`);
    check(sc.privileged !== true, `${w}: not privileged`);
    check((sc.capabilities?.drop ?? []).includes('ALL') && !(sc.capabilities?.add ?? []).length,
      `${w}: capabilities drop ALL, add none`);
    check((sc.seccompProfile ?? psc.seccompProfile)?.type === 'RuntimeDefault', `${w}: seccomp RuntimeDefault`);
    check(c.resources?.limits?.cpu !== undefined && c.resources?.limits?.memory !== undefined,
      `${w}: cpu and memory limits`);
  }
}
if (proxyDep)
  checkPodHardening('proxy Deployment', proxyDep.spec.template.spec);

// The sandbox Jobs.
const jobs = byKind('Job');
check(jobs.length >= 2, 'an offline and a proxy Job template');
const sandboxLabelSets = [];
for (const j of jobs) {
  const where = `${j.__file}: Job ${j.metadata.name}`;
  const t = j.spec?.template ?? {};
  const spec = t.spec ?? { containers: [] };
  const labels = t.metadata?.labels ?? {};
  const net = labels['cordon/net'];
  sandboxLabelSets.push({ where, labels, net });
  check(labels['app.kubernetes.io/component'] === 'sandbox', `${where}: pods labelled component=sandbox`);
  check(net === 'none' || net === 'proxy', `${where}: cordon/net is none or proxy`);
  check(spec.runtimeClassName === rcName && rcName !== undefined, `${where}: runtimeClassName ${rcName}`);
  check(spec.restartPolicy === 'Never' && j.spec.backoffLimit === 0, `${where}: never restarted or retried`);
  check(Number.isInteger(j.spec.activeDeadlineSeconds) && j.spec.activeDeadlineSeconds > 0,
    `${where}: activeDeadlineSeconds`);
  check(Number.isInteger(j.spec.ttlSecondsAfterFinished), `${where}: ttlSecondsAfterFinished`);
  check(spec.dnsPolicy === 'None' && (spec.dnsConfig?.nameservers ?? []).every((n) => n.startsWith('127.')),
    `${where}: no resolver (dnsPolicy None, loopback only)`);
  checkPodHardening(where, spec);
  for (const c of spec.containers) {
    const tmp = (c.volumeMounts ?? []).find((m) => m.mountPath === '/tmp');
    const vol = (spec.volumes ?? []).find((v) => v.name === tmp?.name);
    check(vol?.emptyDir?.sizeLimit !== undefined, `${where}: /tmp is an emptyDir with sizeLimit`);
    for (const m of c.volumeMounts ?? [])
      if (m.mountPath !== '/tmp')
        check(m.readOnly === true, `${where}: ${m.mountPath} mounted read-only`);
    const env = Object.fromEntries((c.env ?? []).map((e) => [e.name, e.value]));
    if (net === 'proxy') {
      check(/CORDON_PROXY_SERVICE_HOST/.test(env.HTTPS_PROXY ?? '') && spec.enableServiceLinks !== false,
        `${where}: HTTPS_PROXY points at the proxy Service`);
    } else {
      check(env.HTTPS_PROXY === undefined && env.HTTP_PROXY === undefined, `${where}: no proxy variables`);
    }
  }
  for (const v of spec.volumes ?? [])
    check(v.hostPath === undefined, `${where}: no hostPath volume ${v.name}`);
}

// NetworkPolicies are additive: gather every egress rule that applies to
// each sandbox pod and require exactly "the proxy pods on the proxy port".
const policies = byKind('NetworkPolicy');
check(policies.some((p) => Object.keys(p.spec.podSelector ?? {}).length === 0 &&
  (p.spec.policyTypes ?? []).includes('Egress') && (p.spec.policyTypes ?? []).includes('Ingress') &&
  !(p.spec.egress ?? []).length && !(p.spec.ingress ?? []).length),
'a default-deny policy covers every pod (ingress and egress)');
function podSelected(p, labels) {
  const sel = p.spec.podSelector ?? {};
  return Object.keys(sel).length === 0 || selects(sel, labels);
}
for (const { where, labels, net } of sandboxLabelSets) {
  const applying = policies.filter((p) => podSelected(p, labels));
  check(applying.some((p) => (p.spec.policyTypes ?? []).includes('Egress')),
    `${where}: some policy restricts its egress`);
  const rules = applying.flatMap((p) => p.spec.egress ?? []);
  const ingress = applying.flatMap((p) => p.spec.ingress ?? []);
  check(ingress.length === 0, `${where}: no ingress allowed`);
  if (net === 'none') {
    check(rules.length === 0, `${where}: offline: no egress rule at all`);
    continue;
  }
  check(rules.length === 1, `${where}: exactly one egress rule`);
  const r = rules[0] ?? {};
  const peers = r.to ?? [];
  check(peers.length === 1 && peers[0].podSelector !== undefined &&
    peers[0].ipBlock === undefined && peers[0].namespaceSelector === undefined &&
    selects(peers[0].podSelector, proxyLabels) && !selects(peers[0].podSelector, labels),
  `${where}: egress only to the proxy pods (same namespace, no ipBlock)`);
  const ports = r.ports ?? [];
  check(ports.length === 1 && ports[0].protocol === 'TCP' && ports[0].port === proxyPort,
    `${where}: egress only to TCP ${proxyPort} (no DNS)`);
}
// And the proxy accepts them.
const proxyIn = policies.filter((p) => podSelected(p, proxyLabels)).flatMap((p) => p.spec.ingress ?? []);
for (const { where, labels, net } of sandboxLabelSets)
  check(proxyIn.some((r) => (r.from ?? []).some((f) => selects(f.podSelector, labels))) === (net === 'proxy'),
    `${where}: the proxy admits it only if it is a proxy-mode sandbox`);

// The allowlist in the ConfigMap is valid, per cordon itself.
const cordon = process.env.CORDON_BIN;
if (cordon && existsSync(cordon) && alCm) {
  const dir = mkdtempSync(join(tmpdir(), 'cordon-k8s-'));
  writeFileSync(join(dir, 'default.list'), alCm.data['default.list']);
  let ok = true;
  try {
    execFileSync(cordon, ['allowlist', 'check', join(dir, 'default.list')], { stdio: 'pipe' });
  } catch {
    ok = false;
  }
  rmSync(dir, { recursive: true, force: true });
  check(ok, 'cordon allowlist check accepts the ConfigMap allowlist');
}

if (failures > 0) {
  console.error(`FAIL: ${failures} of ${checks} checks failed`);
  process.exit(1);
}
console.log(`PASS: ${checks} checks`);
