/**
 * Migrating from Kopf (docs/migrating-from-kopf.md): Kopf 1.45.2, from PyPI, handles objects and
 * stops, one of them half-way through a change; objects change and one is made while no operator
 * runs; then `causeway run --adopt-kopf-state` with handlers of the same ids calls only what those
 * changes call for, and goes on with the half-done change where Kopf left it. Without the flag,
 * everything Kopf handled is created again.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ensureKopf } from '../../bench/kopf.ts';
import { cacheRoot } from '../../deploy/control-plane/index.ts';
import type { KubernetesObject } from '../../protocol/index.ts';
import { testCluster, testNamespace } from '../support/cluster.ts';
import { kubectlOk } from '../support/kubectl.ts';
import { applyFile, createKopfExample, eventually, kubeClient } from '../support/operator.ts';
import { causeway, startCli } from '../support/processes.ts';

const KOPF_OPERATOR = new URL('../fixtures/kopf_migration.py', import.meta.url).pathname;
const CAUSEWAY_OPERATOR = 'test/fixtures/kopf-migration-operator.ts';
const DIFF_BASE = 'kopf.zalando.org/last-handled-configuration';
const PROGRESS = 'kopf.zalando.org/update_fn';
/** Kopf starts, lists and handles in a few seconds; more on a busy machine. */
const KOPF_TIMEOUT_MS = 60_000;

interface KopfRecord {
  started: string;
  retries: number;
}

describe('migrating from Kopf', () => {
  it('calls no handler for what Kopf handled, and the handlers of what changed since, only with the flag', async (t) => {
    const kopf = ensureKopf(cacheRoot(), (line) => process.stderr.write(`[kopf] ${line}\n`));
    await applyFile(new URL('../../examples/01-minimal/crd.yaml', import.meta.url));
    const [adopting, notAdopting] = [await testNamespace(t), await testNamespace(t)];
    const client = await kubeClient();
    const path = (namespace: string, name: string) =>
      `/apis/kopf.dev/v1/namespaces/${namespace}/kopfexamples/${name}`;
    const read = (namespace: string, name: string) => client.get<KubernetesObject>(path(namespace, name));
    const change = (namespace: string, name: string, spec: Record<string, unknown>) =>
      client.patch(path(namespace, name), 'merge', { spec });

    // Made with kubectl apply, labelled and annotated: kubectl's bookkeeping must not count as a change.
    await applyUnchanged(adopting, 'value');
    await createKopfExample(adopting, 'changed', { field: 'value' });
    await createKopfExample(adopting, 'half-done', { field: 'value' });
    await applyUnchanged(notAdopting, 'value');
    await createKopfExample(notAdopting, 'changed', { field: 'value' });
    const handledByKopf = [
      [adopting, 'unchanged'],
      [adopting, 'changed'],
      [adopting, 'half-done'],
      [notAdopting, 'unchanged'],
      [notAdopting, 'changed'],
    ] as const;

    const env = { ...process.env, KUBECONFIG: (await testCluster()).kubeconfigPath };
    const kopfRun = startCli(
      kopf,
      ['run', '--standalone', '--namespace', adopting, '--namespace', notAdopting, KOPF_OPERATOR],
      env,
    );
    t.after(() => kopfRun.stop());
    for (const [namespace, name] of handledByKopf) {
      await eventually(
        `Kopf's creation of ${namespace}/${name}`,
        async () => handledBy(await read(namespace, name), 'kopf'),
        KOPF_TIMEOUT_MS,
      );
    }
    // Kopf fails this update and retries it: stopped after two attempts, it leaves its progress.
    await change(adopting, 'half-done', { failing: 'yes' });
    await eventually(
      "Kopf's second attempt at the update",
      async () => ((progressOf(await read(adopting, 'half-done'))?.retries ?? 0) >= 2 ? true : undefined),
      KOPF_TIMEOUT_MS,
    );
    assert.equal(await kopfRun.stop(), 0, `Kopf exits cleanly:\n${kopfRun.output()}`);
    const halfDone = await read(adopting, 'half-done');
    const kopfProgress = progressOf(halfDone) as KopfRecord;
    assert.equal(halfDone.status?.update_fn, undefined, 'Kopf stopped before the update succeeded');

    // While no operator runs: changes, and a new object.
    await change(adopting, 'changed', { field: 'changed' });
    await change(notAdopting, 'changed', { field: 'changed' });
    await createKopfExample(adopting, 'new', { field: 'value' });
    const kopfDiffBase = (await read(adopting, 'changed')).metadata.annotations?.[DIFF_BASE];

    const adoptingCalls = callLog();
    const withFlag = causeway(
      [
        'run',
        CAUSEWAY_OPERATOR,
        '--standalone',
        '--namespace',
        adopting,
        '--adopt-kopf-state',
        'kopf.zalando.org',
      ],
      { ...env, CAUSEWAY_CALL_LOG: adoptingCalls.path },
    );
    t.after(() => withFlag.stop());
    /** The object once the Causeway operator called a handler for it, whichever. */
    const calledByCauseway = (namespace: string, name: string) =>
      eventually(
        `a call for ${namespace}/${name}`,
        async () => {
          const object = await read(namespace, name);
          const called = handledBy(object, 'causeway') ?? handledBy(object, 'causeway', 'update_fn');
          return called ? object : undefined;
        },
        KOPF_TIMEOUT_MS,
      );

    const changed = await calledByCauseway(adopting, 'changed');
    assert.deepEqual(changed.status?.create_fn, { by: 'kopf' }, 'not created again');
    assert.deepEqual(
      [resultOf(changed).diff, resultOf(changed).retry],
      [[['change', ['spec', 'field'], 'value', 'changed']], 0],
      "the change since Kopf's diff-base, at the first attempt",
    );
    const continued = await calledByCauseway(adopting, 'half-done');
    assert.deepEqual(resultOf(continued), {
      by: 'causeway',
      diff: [['add', ['spec', 'failing'], null, 'yes']],
      retry: kopfProgress.retries,
      started: new Date(kopfProgress.started).toISOString(),
    });
    assert.deepEqual((await calledByCauseway(adopting, 'new')).status?.create_fn, { by: 'causeway' });
    // Everything else is handled by now; an object Kopf handled and that did not change was not
    // called, and its next change is an update from what Kopf recorded.
    await applyUnchanged(adopting, 'later');
    const unchanged = await calledByCauseway(adopting, 'unchanged');
    assert.deepEqual(unchanged.status?.create_fn, { by: 'kopf' });
    assert.deepEqual(resultOf(unchanged).diff, [['change', ['spec', 'field'], 'value', 'later']]);
    assert.deepEqual(adoptingCalls.read(), [
      'create_fn new',
      'update_fn changed',
      'update_fn half-done',
      'update_fn unchanged',
    ]);
    // Our own record from now on; Kopf's left where it was.
    const after = await read(adopting, 'changed');
    assert.equal(typeof (after.status?.causeway as { essence?: unknown })?.essence, 'string');
    assert.equal(after.metadata.annotations?.[DIFF_BASE], kopfDiffBase);
    assert.equal(await withFlag.stop(), 0);

    const notAdoptingCalls = callLog();
    const withoutFlag = causeway(['run', CAUSEWAY_OPERATOR, '--standalone', '--namespace', notAdopting], {
      ...env,
      CAUSEWAY_CALL_LOG: notAdoptingCalls.path,
    });
    t.after(() => withoutFlag.stop());
    for (const name of ['unchanged', 'changed']) {
      const again = await calledByCauseway(notAdopting, name);
      assert.deepEqual(again.status?.create_fn, { by: 'causeway' }, `${name} is created again`);
      assert.equal(again.status?.update_fn, undefined);
    }
    assert.deepEqual(notAdoptingCalls.read(), ['create_fn changed', 'create_fn unchanged']);
    assert.equal(await withoutFlag.stop(), 0);

    async function applyUnchanged(namespace: string, field: string): Promise<void> {
      const manifest = {
        apiVersion: 'kopf.dev/v1',
        kind: 'KopfExample',
        metadata: { name: 'unchanged', labels: { tier: 'gold' }, annotations: { owner: 'team-a' } },
        spec: { field, options: {}, items: ['b', 'a'] },
      };
      await kubectlOk(['apply', '--namespace', namespace, '-f', '-'], JSON.stringify(manifest));
    }
  });
});

describe('causeway --adopt-kopf-state', () => {
  it('refuses what is not an annotation prefix, saying what it expects', async () => {
    const gateway = causeway(
      ['gateway', '--functions', 'x=http://127.0.0.1:1', '--adopt-kopf-state', 'kopf.zalando.org/'],
      process.env,
    );
    assert.equal(await gateway.exited(), 2);
    assert.match(
      gateway.output(),
      /--adopt-kopf-state expects the annotation prefix of the Kopf operator's state \(Kopf's default: kopf.zalando.org\), got "kopf.zalando.org\/"/,
    );
  });
});

/** True when the handler's result (create_fn unless told) says that `by` called it. */
function handledBy(object: KubernetesObject, by: 'kopf' | 'causeway', id = 'create_fn'): true | undefined {
  return (object.status?.[id] as { by?: string } | undefined)?.by === by ? true : undefined;
}

/** What the Causeway operator's update_fn returned, stored in the status. */
function resultOf(object: KubernetesObject): { diff?: unknown; retry?: number; started?: string } {
  return (object.status?.update_fn ?? {}) as { diff?: unknown; retry?: number; started?: string };
}

/** Kopf's progress record of update_fn, as it wrote it. */
function progressOf(object: KubernetesObject): KopfRecord | undefined {
  const text = object.metadata.annotations?.[PROGRESS];
  return text === undefined ? undefined : (JSON.parse(text) as KopfRecord);
}

/** A file the Causeway operator appends its calls to, read back sorted. */
function callLog(): { path: string; read(): string[] } {
  const path = join(mkdtempSync(join(tmpdir(), 'causeway-kopf-migration-')), 'calls.log');
  writeFileSync(path, '');
  return { path, read: () => readFileSync(path, 'utf8').split('\n').filter(Boolean).sort() };
}
