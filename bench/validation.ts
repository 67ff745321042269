/**
 * What checking the protocol's shapes costs in CPU: the gateway reading a manifest and replies (a
 * resource call's and an admission review's), the SDK checking a request. Each is timed on a value
 * already parsed, as the checks receive it, in rounds; `--baseline` times a checkout of another commit
 * (`git archive main | tar -x -C /tmp/base`, its node_modules linked) in rounds alternating with this one's,
 * so that both see the same machine.
 *
 * The checks are imported by path from each tree, beneath the package's entries: a baseline's tree
 * has no entry of its own for them.
 *
 *   npm run bench:validation -- [--baseline /tmp/base] [--rounds 7] [--ms 300]
 */
import { join } from 'node:path';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    baseline: { type: 'string' },
    rounds: { type: 'string', default: '7' },
    ms: { type: 'string', default: '300' },
  },
});
const ROUNDS = Number(values.rounds);
const ROUND_MS = Number(values.ms);
const HERE = new URL('..', import.meta.url).pathname;

type Check = () => unknown;

/** The checks of the tree at `root`, each bound to its realistic input. */
async function checksOf(root: string): Promise<Record<string, Check>> {
  const validation = await import(join(root, 'gateway/dispatch/validation.ts'));
  const sdk = await import(join(root, 'functions/invocation.ts'));
  const manifest = realisticManifest();
  const reply = realisticReply();
  const review = realisticReview();
  const request = realisticRequest();
  const handlers = new Map(
    request.handlers.map((due) => [due.id, { id: due.id, kind: 'update', fn: () => undefined }]),
  );
  const bytes = new TextEncoder().encode(JSON.stringify(request));
  return {
    'gateway: manifest (24 handlers, 3 activities)': () => validation.parseManifest(manifest),
    'gateway: reply (3 outcomes, effects, 6 log lines)': () =>
      validation.parseInvocationResponse(reply, ['create_fn', 'retrying', 'children']),
    'gateway: admission reply (2 outcomes, warnings)': () =>
      validation.parseInvocationResponse(review, ['validate_fn', 'mutate_fn'], true),
    'sdk: request (3 handlers, old/new/diff, indexes)': () => sdk.checkInvocation(request, handlers),
    'sdk: request from bytes (JSON.parse included)': () => sdk.parseInvocation(bytes, handlers),
  };
}

/** Calls of `check` per second of this process's CPU time, over about `ms` of it: the machine is shared. */
function rate(check: Check, ms: number): number {
  let calls = 0;
  const cpu = () => {
    const { user, system } = process.cpuUsage();
    return (user + system) / 1000;
  };
  const start = cpu();
  let now = start;
  while (now - start < ms) {
    for (let i = 0; i < 200; i++) check();
    calls += 200;
    now = cpu();
  }
  return calls / ((now - start) / 1000);
}

const median = (list: number[]) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)] as number;

const trees: Record<string, Record<string, Check>> = { current: await checksOf(HERE) };
if (values.baseline) trees.baseline = await checksOf(values.baseline);
const names = Object.keys(trees.current as Record<string, Check>);
const rates: Record<string, Record<string, number[]>> = {};
for (const tree of Object.keys(trees)) {
  rates[tree] = Object.fromEntries(names.map((name) => [name, []]));
  // Warm-up: the JIT settles before anything counts.
  for (const name of names) rate((trees[tree] as Record<string, Check>)[name] as Check, ROUND_MS);
}
for (let round = 0; round < ROUNDS; round++) {
  // Which tree goes first alternates, so neither always runs right after the other.
  const order = round % 2 === 0 ? Object.keys(trees) : Object.keys(trees).reverse();
  for (const name of names) {
    for (const tree of order) {
      const check = (trees[tree] as Record<string, Check>)[name] as Check;
      (rates[tree] as Record<string, number[]>)[name]?.push(rate(check, ROUND_MS));
    }
  }
}
const micros = (tree: string, name: string) => 1e6 / median(rates[tree]?.[name] as number[]);
process.stdout.write(`median of ${ROUNDS} rounds of ${ROUND_MS} ms of CPU, µs of CPU per check\n`);
for (const name of names) {
  const current = micros('current', name);
  const line = values.baseline
    ? `${name.padEnd(52)} baseline ${micros('baseline', name).toFixed(2).padStart(7)}  current ${current.toFixed(2).padStart(7)}  (${((current / micros('baseline', name) - 1) * 100).toFixed(1)}%)`
    : `${name.padEnd(52)} ${current.toFixed(2).padStart(7)}`;
  process.stdout.write(`${line}\n`);
}

function realisticManifest() {
  const resource = { group: 'kopf.dev', version: 'v1', name: 'kopfexamples' };
  const filters = {
    labels: { app: 'demo', tier: { present: true } },
    annotations: { 'example.com/skip': { absent: true } },
    field: 'spec.replicas',
    value: { present: true },
  };
  const options = { retries: 5, timeout: 600, backoff: 10, indexes: ['byNode'] };
  const kinds = ['create', 'update', 'delete', 'resume', 'field', 'event', 'reconcile', 'timer'];
  const handlers = Array.from({ length: 24 }, (_, index) => {
    const kind = kinds[index % kinds.length] as string;
    return {
      id: `${kind}_${index}`,
      kind,
      resource,
      filters,
      options: kind === 'timer' ? { ...options, interval: 30, idle: 5, sharp: true } : options,
    };
  });
  return {
    protocol: 'causeway.dev/v1',
    name: 'kopfexample-operator',
    handlers,
    activities: [
      { id: 'warm_up', kind: 'startup', options: { retries: 3 } },
      { id: 'goodbye', kind: 'cleanup' },
      { id: 'alive', kind: 'probe', options: { timeout: 2 } },
    ],
    scope: { resources: ['kopfexamples.kopf.dev', 'configmaps'], children: ['configmaps'] },
    sessions: true,
    indexVersions: true,
  };
}

function realisticReply() {
  const event = (reason: string) => ({ type: 'Normal', reason, message: `${reason} the object` });
  return {
    protocol: 'causeway.dev/v1',
    outcomes: {
      create_fn: {
        status: 'success',
        result: { message: 'created', children: 2 },
        patch: { status: { phase: 'Ready', conditions: [{ type: 'Ready', status: 'True' }] } },
        events: [
          event('Created'),
          {
            ...event('Configured'),
            about: { apiVersion: 'v1', kind: 'ConfigMap', name: 'kex-1-config', namespace: 'default' },
          },
        ],
        apply: [
          {
            apiVersion: 'v1',
            kind: 'ConfigMap',
            metadata: { name: 'kex-1-config', labels: { app: 'demo' } },
            data: { 'config.yaml': 'replicas: 3\n' },
          },
        ],
      },
      retrying: { status: 'temporary', message: 'the database is not ready yet', delay: 30 },
      children: {
        status: 'success',
        requeueAfter: 60,
        subhandlers: {
          first: { status: 'success' },
          second: { status: 'temporary', message: 'x', delay: 1 },
        },
      },
    },
    logs: Array.from({ length: 6 }, (_, index) => ({
      level: index % 3 === 0 ? 'warning' : 'info',
      message: `step ${index} of the handler went as planned`,
      handler: 'create_fn',
    })),
    memo: { seen: 3, last: '2026-12-07T18:00:00Z' },
  };
}

function realisticReview() {
  return {
    protocol: 'causeway.dev/v1',
    outcomes: {
      validate_fn: { status: 'success', warnings: ['spec.replicas above 10 costs more'] },
      mutate_fn: { status: 'success', patch: { metadata: { labels: { mutated: 'yes' } } } },
    },
    logs: [{ level: 'info', message: 'reviewed', handler: 'validate_fn' }],
  };
}

function realisticRequest() {
  const object = {
    apiVersion: 'kopf.dev/v1',
    kind: 'KopfExample',
    metadata: {
      name: 'kex-1',
      namespace: 'default',
      uid: '7c4e0a9e-2f6b-4d1e-9a51-0c2b9f8e1d3a',
      resourceVersion: '123456',
      generation: 4,
      labels: { app: 'demo', tier: 'web' },
      annotations: { 'example.com/owner': 'team-a' },
      finalizers: ['causeway.dev/kopfexample-operator'],
    },
    spec: { replicas: 3, image: 'nginx:1.27', items: ['a', 'b', 'c'], field: { nested: { deep: true } } },
    status: { phase: 'Pending', create_fn: { message: 'created' } },
  };
  const due = (id: string) => ({
    id,
    retry: 1,
    started: '2026-12-07T18:00:00.000Z',
    idempotencyKey: `${id}-7c4e0a9e-123456`,
    old: { spec: { replicas: 2 } },
    new: { spec: { replicas: 3 } },
    diff: [['change', ['spec', 'replicas'], 2, 3]],
  });
  return {
    protocol: 'causeway.dev/v1',
    reason: 'update',
    resource: {
      group: 'kopf.dev',
      version: 'v1',
      plural: 'kopfexamples',
      kind: 'KopfExample',
      namespaced: true,
    },
    body: object,
    handlers: [due('update_fn'), due('field_fn'), due('other_fn')],
    deadline: '2026-12-07T18:01:00.000Z',
    memo: { seen: 3 },
    indexes: {
      byNode: [
        ['node-1', ['default/kex-1', 'default/kex-2']],
        [null, ['default/kex-3']],
      ],
    },
    indexVersions: { byNode: 'a1b2c3d4.7' },
    traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
  };
}
