/**
 * Cluster-scoped resources: objects without a namespace are handled like namespaced ones, and are
 * watched cluster-wide whatever namespaces the gateway serves (a namespace selection is about
 * namespaced resources only).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { operator } from '../../functions/index.ts';
import { applyManifests } from '../../gateway/kube/apply.ts';
import type { KubeClient } from '../../gateway/kube/client.ts';
import type { KubernetesObject } from '../../protocol/index.ts';
import { testNamespace } from '../support/cluster.ts';
import { customResourceDefinition, uniqueGroup } from '../support/crds.ts';
import {
  eventually,
  kubeClient,
  memoryLogger,
  type RunningOperator,
  runOperator,
  TEST_SECRET,
} from '../support/operator.ts';

const group = uniqueGroup('clustered');
const kind = { group, kind: 'Clustered', plural: 'clustereds', scope: 'Cluster' } as const;
const CRD_PATH = `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${kind.plural}.${group}`;
const COLLECTION = `/apis/${group}/v1/${kind.plural}`;
const RESOURCE_KEY = `${kind.plural}.${group}/v1`;

/** Create and update handlers on the cluster-scoped resource; `create_fn` also posts an event. */
function clusterOperator(name: string) {
  const calls: string[] = [];
  const op = operator({ name, secret: TEST_SECRET });
  op.on.create(`${kind.plural}.${group}`, async function create_fn({ name, namespace, events }) {
    calls.push(`create ${name}`);
    events.normal('Created', `handled ${name}`);
    return { name, namespace: namespace ?? '(none)' };
  });
  op.on.update(`${kind.plural}.${group}`, async function update_fn({ name, diff }) {
    calls.push(`update ${name} ${JSON.stringify(diff)}`);
    return { diff };
  });
  return { op, calls };
}

describe('cluster-scoped resources', () => {
  let client: KubeClient;
  const created: string[] = [];

  before(async () => {
    client = await kubeClient();
    await applyManifests(client, [customResourceDefinition(kind)], { fieldManager: 'causeway-tests' });
  });

  // Cluster-scoped objects outlive namespaces: they and their CRD are deleted here, not with a namespace.
  // None carries a finalizer (no delete handlers), so the CRD goes at once.
  after(async () => {
    for (const name of created) await client.request(`${COLLECTION}/${name}`, { method: 'DELETE' });
    await client.request(CRD_PATH, { method: 'DELETE' });
  });

  async function create(name: string, size: number): Promise<void> {
    await client.request(COLLECTION, {
      method: 'POST',
      body: { apiVersion: `${group}/v1`, kind: kind.kind, metadata: { name }, spec: { size } },
    });
    created.push(name);
  }

  function statusOf(name: string, key: string): Promise<KubernetesObject> {
    return eventually(`status.${key} of ${name}`, async () => {
      const object = await client.get<KubernetesObject>(`${COLLECTION}/${name}`);
      return object.status?.[key] === undefined ? undefined : object;
    });
  }

  async function start(
    name: string,
    namespaces: readonly string[] | 'all',
  ): Promise<RunningOperator & { calls: string[]; lines: string[] }> {
    const { op, calls } = clusterOperator(name);
    const logger = memoryLogger();
    const running = await runOperator(op, { namespaces, logger });
    return { ...running, calls, lines: logger.lines };
  }

  it('handles create and update of objects without a namespace, watching cluster-wide', async (t) => {
    const running = await start('clustered-all', 'all');
    t.after(() => running.stop());
    const name = uniqueName('all');

    await create(name, 1);
    const handled = await statusOf(name, 'create_fn');
    assert.equal(handled.metadata.namespace, undefined);
    assert.deepEqual(handled.status?.create_fn, { name, namespace: '(none)' });
    assert.equal(typeof (handled.status?.causeway as { essence?: unknown } | undefined)?.essence, 'string');

    await client.patch(`${COLLECTION}/${name}`, 'merge', { spec: { size: 2 } });
    const updated = await statusOf(name, 'update_fn');
    assert.deepEqual(updated.status?.update_fn, { diff: [['change', ['spec', 'size'], 1, 2]] });
    assert.deepEqual(running.calls, [`create ${name}`, `update ${name} [["change",["spec","size"],1,2]]`]);

    assert.ok(
      running.lines.some((line) => line.includes(` watching resource=${RESOURCE_KEY} path=${COLLECTION}\n`)),
    );
    assert.ok(
      !running.lines.some((line) => /watching .*path=\S*\/namespaces\//.test(line)),
      'no watch is per namespace',
    );

    // Events about an object without a namespace go to `default`, naming the object without one.
    const uid = handled.metadata.uid;
    const event = await eventually('the Created event', async () => {
      const list = await client.get<{ items: Array<Record<string, unknown>> }>(
        '/api/v1/namespaces/default/events',
        { fieldSelector: `involvedObject.uid=${uid}` },
      );
      return list.items[0];
    });
    assert.deepEqual(
      { ...(event.involvedObject as object), resourceVersion: undefined },
      { apiVersion: `${group}/v1`, kind: kind.kind, name, uid, resourceVersion: undefined },
    );
    assert.equal(event.message, `handled ${name}`);
  });

  it('still watches them cluster-wide when the gateway serves named namespaces', async (t) => {
    const namespace = await testNamespace(t);
    const running = await start('clustered-named', [namespace]);
    t.after(() => running.stop());
    const name = uniqueName('named');

    await create(name, 1);
    const handled = await statusOf(name, 'create_fn');
    assert.deepEqual(handled.status?.create_fn, { name, namespace: '(none)' });
    assert.deepEqual(running.calls, [`create ${name}`]);
    assert.ok(
      running.lines.some((line) => line.includes(` watching resource=${RESOURCE_KEY} path=${COLLECTION}\n`)),
    );
    assert.ok(!running.lines.some((line) => line.includes(`/namespaces/${namespace}/`)));
  });

  it('still watches them cluster-wide when the gateway serves namespaces by pattern', async (t) => {
    const running = await start('clustered-glob', ['causeway-none-*', '!kube-*']);
    t.after(() => running.stop());
    const name = uniqueName('glob');

    await create(name, 1);
    const handled = await statusOf(name, 'create_fn');
    assert.deepEqual(handled.status?.create_fn, { name, namespace: '(none)' });
    assert.deepEqual(running.calls, [`create ${name}`]);
    assert.ok(
      running.lines.some((line) => line.includes(` watching resource=${RESOURCE_KEY} path=${COLLECTION}\n`)),
    );
  });
});

let counter = 0;
function uniqueName(prefix: string): string {
  return `${prefix}-${++counter}`;
}
