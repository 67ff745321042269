/** Reconcile, raw-event and memo/patch behaviour on a real apiserver. */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { operator, requeue } from '../../functions/index.ts';
import type { KubeClient } from '../../gateway/kube/client.ts';
import type { KubernetesObject } from '../../protocol/index.ts';
import { testNamespace } from '../support/cluster.ts';
import { applyFile, eventually, kubeClient, runOperator, TEST_SECRET } from '../support/operator.ts';

describe('handlers beyond creation', () => {
  let client: KubeClient;
  before(async () => {
    await applyFile(new URL('../../examples/01-minimal/crd.yaml', import.meta.url));
    client = await kubeClient();
  });
  const path = (namespace: string) => `/apis/kopf.dev/v1/namespaces/${namespace}/kopfexamples`;
  const create = (namespace: string, name: string, spec: Record<string, unknown> = {}) =>
    client.request(path(namespace), {
      method: 'POST',
      body: { apiVersion: 'kopf.dev/v1', kind: 'KopfExample', metadata: { name }, spec },
    });
  const read = (namespace: string, name: string) =>
    client.get<KubernetesObject>(`${path(namespace)}/${name}`);

  it('reconciles after creation, after a change and when requeued, but not after its own status writes', async (t) => {
    const namespace = await testNamespace(t);
    const seen: Array<{ size: unknown }> = [];
    const op = operator({ name: 'reconciler', secret: TEST_SECRET });
    op.on.reconcile('kopfexamples', async function reconcile_fn({ spec }) {
      seen.push({ size: spec.size });
      return seen.length === 2 ? requeue(0.2, { rounds: seen.length }) : { rounds: seen.length };
    });
    const running = await runOperator(op, { namespaces: [namespace], transport: 'in-process' });
    t.after(() => running.stop());

    await create(namespace, 'level', { size: 1 });
    await eventually('the first reconciliation', async () =>
      (await read(namespace, 'level')).status?.reconcile_fn ? true : undefined,
    );
    await client.patch(`${path(namespace)}/level`, 'merge', { spec: { size: 2 } });
    // The change reconciles (round 2), which asks to be requeued: round 3 comes without any change.
    const third = await eventually('the requeued reconciliation', async () => {
      const object = await read(namespace, 'level');
      return (object.status?.reconcile_fn as { rounds?: number })?.rounds === 3 ? object : undefined;
    });
    assert.deepEqual(seen, [{ size: 1 }, { size: 2 }, { size: 2 }]);
    assert.deepEqual(third.status?.reconcile_fn, { rounds: 3 });
  });

  it("calls an update handler filtered by a field's value when the value was or becomes it, as Kopf does", async (t) => {
    const namespace = await testNamespace(t);
    const op = operator({ name: 'phases', secret: TEST_SECRET });
    const calls: string[] = [];
    // One filtered by a value, one given as a callback, and one that hears every update.
    op.on.update(
      'kopfexamples',
      { field: 'spec.phase', value: 'ready' },
      function about_ready({ old, new: now }) {
        calls.push(`${old} → ${now}`);
        return { from: old, to: now };
      },
    );
    op.on.update(
      'kopfexamples',
      { field: 'spec.phase', value: (phase) => phase === 'ready' },
      function by_callback({ new: now }) {
        return { to: now };
      },
    );
    op.on.update('kopfexamples', { field: 'spec.phase' }, function any_phase({ new: now }) {
      return { to: now };
    });
    const running = await runOperator(op, { namespaces: [namespace], transport: 'in-process' });
    t.after(() => running.stop());

    await create(namespace, 'phased', { phase: 'starting' });
    const after = async (phase: string) => {
      await client.patch(`${path(namespace)}/phased`, 'merge', { spec: { phase } });
      return eventually(`the update to ${phase}`, async () => {
        const { status } = await read(namespace, 'phased');
        // A handler of a field is stored under `<id>/<field>`, as in Kopf.
        return (status?.['any_phase/spec.phase'] as { to?: string })?.to === phase ? status : undefined;
      });
    };
    assert.deepEqual((await after('ready'))?.['about_ready/spec.phase'], { from: 'starting', to: 'ready' });
    const left = await after('done');
    assert.deepEqual(
      left?.['about_ready/spec.phase'],
      { from: 'ready', to: 'done' },
      'called as the value was ready',
    );
    assert.deepEqual(
      left?.['by_callback/spec.phase'],
      { to: 'done' },
      'a callback is asked about the old value too',
    );
    await after('archived');
    assert.deepEqual(calls, ['starting → ready', 'ready → done'], 'not for done → archived');
  });

  it('reconciles after the cause handlers, in a call of its own, seeing what they wrote', async (t) => {
    const namespace = await testNamespace(t);
    const op = operator({ name: 'both', secret: TEST_SECRET });
    op.on.create('kopfexamples', async function create_fn() {
      return { created: true };
    });
    op.on.reconcile('kopfexamples', async function reconcile_fn({ status }) {
      return { sawCreated: (status.create_fn as { created?: boolean } | undefined)?.created === true };
    });
    const calls: string[][] = [];
    const service = {
      name: op.name,
      async fetch(request: Request) {
        if (new URL(request.url).pathname === '/causeway/v1/invoke') {
          const body = (await request.clone().json()) as { reason: string; handlers: Array<{ id: string }> };
          calls.push([body.reason, ...body.handlers.map((handler) => handler.id)]);
        }
        return op.fetch(request);
      },
    };
    const running = await runOperator(service, { namespaces: [namespace], transport: 'in-process' });
    t.after(() => running.stop());

    await create(namespace, 'both-kinds');
    const object = await eventually('the reconcile result', async () => {
      const current = await read(namespace, 'both-kinds');
      return current.status?.reconcile_fn ? current : undefined;
    });
    assert.deepEqual(object.status?.reconcile_fn, { sawCreated: true });
    assert.deepEqual(calls, [
      ['create', 'create_fn'],
      ['reconcile', 'reconcile_fn'],
    ]);
  });

  it('delivers raw watch events in order, and keeps the memo between calls; patches land', async (t) => {
    const namespace = await testNamespace(t);
    const events: string[] = [];
    const op = operator({ name: 'observer', secret: TEST_SECRET });
    op.on.event('kopfexamples', async function watch_fn({ event, name }) {
      events.push(`${event} ${name}`);
    });
    op.on.create('kopfexamples', async function create_fn({ memo }) {
      memo.greeting = 'remembered';
    });
    op.on.update('kopfexamples', async function update_fn({ memo, patch }) {
      patch.metadata = { labels: { seen: 'yes' } };
      return { memo: memo.greeting };
    });
    const running = await runOperator(op, { namespaces: [namespace], transport: 'in-process' });
    t.after(() => running.stop());

    await create(namespace, 'watched', { size: 1 });
    await eventually('the create cycle', async () => {
      const object = await read(namespace, 'watched');
      return (object.status?.causeway as { essence?: string })?.essence ? true : undefined;
    });
    await client.patch(`${path(namespace)}/watched`, 'merge', { spec: { size: 2 } });
    // The result goes out with the status write, the patch with the object's, right after it.
    const updated = await eventually('the update result and its patch', async () => {
      const object = await read(namespace, 'watched');
      return object.status?.update_fn && object.metadata.labels?.seen ? object : undefined;
    });
    assert.deepEqual(updated.status?.update_fn, { memo: 'remembered' });
    assert.equal(updated.metadata.labels?.seen, 'yes');

    await client.request(`${path(namespace)}/watched`, { method: 'DELETE' });
    await eventually('the DELETED event', async () =>
      events.includes('DELETED watched') ? true : undefined,
    );
    assert.equal(events[0], 'ADDED watched');
    assert.equal(events.at(-1), 'DELETED watched');
    assert.ok(events.slice(1, -1).every((event) => event === 'MODIFIED watched'));
  });
});
