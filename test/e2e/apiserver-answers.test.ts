/**
 * Answers of the real apiserver that refuse the gateway for a while, on a control plane of this
 * file's own (without its watch cache, with an audit log):
 * - 410 Gone to a watch resumed from a position etcd has compacted away: the gateway lists again and
 *   misses nothing of what changed while its watch was away. A proxy parts the gateway's watch from the
 *   apiserver while objects are created and deleted and etcd is compacted (ControlPlane.compact,
 *   through etcd's JSON gateway); without the watch cache, etcd itself answers the resumed watch.
 * - 429 Too Many Requests from API Priority and Fairness, to the gateway's own ServiceAccount: each
 *   refused request is tried again no sooner than its Retry-After, as the audit log shows.
 * - 422 and 404 to the gateway's writes, from a competing writer that changes or deletes an object
 *   while its handler runs.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, before, describe, it } from 'node:test';
import { operator } from '../../functions/index.ts';
import type { KubernetesObject } from '../../protocol/index.ts';
import { startLaggingProxy } from '../support/lagging-proxy.ts';
import {
  createKopfExamples,
  createResults,
  eventually,
  memoryLogger,
  objectNames,
  runOperator,
  TEST_SECRET,
} from '../support/operator.ts';
import { type PrivateCluster, startPrivateCluster } from '../support/private-cluster.ts';
import { flowControlCount, throttledServiceAccount } from '../support/throttled.ts';

describe('answers of the apiserver that refuse the gateway for a while', () => {
  let cluster: PrivateCluster;
  before(async () => {
    // 20 requests at once, read-only and mutating each: the throttled level's share of 1 in some 246
    // is then one seat (of the defaults', three), so the gateway's writes certainly meet a 429.
    cluster = await startPrivateCluster({ watchCache: false, auditLog: true, requestsInFlight: 20 });
  });
  after(() => cluster?.stop());

  it('410 Gone to a watch resumed after etcd compacted its position: the gateway lists again and handles what changed meanwhile', async (t) => {
    const namespace = await cluster.namespace();
    const path = `/apis/kopf.dev/v1/namespaces/${namespace}/kopfexamples`;
    const proxy = await startLaggingProxy(cluster.controlPlane);
    t.after(() => proxy.close());

    const calls: string[] = [];
    const op = operator({ name: 'expired', secret: TEST_SECRET });
    op.on.create('kopfexamples', async function create_fn({ name }) {
      calls.push(`create ${name}`);
      return { created: name };
    });
    // A delete handler: the finalizer holds a deleted object until the gateway has seen the deletion.
    op.on.delete('kopfexamples', async function delete_fn({ name }) {
      calls.push(`delete ${name}`);
    });
    const logger = memoryLogger();
    const running = await runOperator(op, {
      namespaces: [namespace],
      kubeconfig: proxy.kubeConfig(),
      logger,
      transport: 'in-process',
    });
    t.after(() => running.stop());

    const first = objectNames('first', 3);
    await createKopfExamples(namespace, first, {}, cluster.client);
    await eventually('the first objects handled', async () =>
      (await createResults(namespace, cluster.client)).size === first.length ? true : undefined,
    );

    // The gateway's watch away: what changes now, it can learn only from a list.
    await proxy.refuseWatches('kopfexamples');
    const missed = objectNames('missed', 5);
    await createKopfExamples(namespace, missed, {}, cluster.client);
    await cluster.client.request(`${path}/${first[0]}`, { method: 'DELETE' });
    const revision = await cluster.controlPlane.compact();
    await proxy.refuseWatches(undefined);

    await eventually('the watch answered 410 Gone', async () =>
      logger.lines.find((line) => /watch position expired \(410 Gone\): listing again/.test(line)),
    );
    await eventually('what changed while the watch was away handled', async () => {
      const list = await cluster.client.get<{ items: KubernetesObject[] }>(path);
      const names = list.items.map((item) => item.metadata.name);
      const handled = list.items.filter((item) => item.status?.create_fn).length;
      return handled === list.items.length && !names.includes(first[0] as string) ? true : undefined;
    });
    t.diagnostic(`etcd compacted at revision ${revision}`);
    assert.deepEqual(
      calls.toSorted(),
      [...[...first, ...missed].map((name) => `create ${name}`), `delete ${first[0]}`].sort(),
      'each handler called once for each object',
    );
  });

  it('429 from API Priority and Fairness to the gateway: each refused write tried again no sooner than its Retry-After, every object handled', async (t) => {
    const namespace = await cluster.namespace();
    const gatewayUser = `system:serviceaccount:${namespace}:gateway`;
    const kubeconfig = await throttledServiceAccount(cluster, namespace, 'gateway', THROTTLED);
    const names = objectNames('kex', OBJECTS);
    await createKopfExamples(namespace, names, {}, cluster.client);

    const calls: string[] = [];
    const op = operator({ name: 'throttled', secret: TEST_SECRET });
    op.on.create('kopfexamples', async function create_fn({ name }) {
      calls.push(name);
      return { created: name };
    });
    const refusedBefore = await flowControlCount(cluster, THROTTLED, 'rejected');
    const dispatchedBefore = await flowControlCount(cluster, THROTTLED, 'dispatched');
    const started = performance.now();
    const running = await runOperator(op, {
      namespaces: [namespace],
      kubeconfig,
      logger: memoryLogger(),
      transport: 'in-process',
    });
    t.after(() => running.stop());
    await eventually(
      `all ${OBJECTS} objects handled`,
      async () => ((await createResults(namespace, cluster.client)).size === OBJECTS ? true : undefined),
      60_000,
    );
    const seconds = (performance.now() - started) / 1000;
    const refused = (await flowControlCount(cluster, THROTTLED, 'rejected')) - refusedBefore;
    const dispatched = (await flowControlCount(cluster, THROTTLED, 'dispatched')) - dispatchedBefore;

    // The apiserver's account of each write to an object: a 429, then the same write again, Retry-After
    // later. (Events the gateway posts have no name to tell one from the next.)
    const writes = (await auditEvents(cluster)).filter(
      (event) =>
        event.user.username === gatewayUser &&
        event.objectRef?.namespace === namespace &&
        event.objectRef.resource === 'kopfexamples',
    );
    const throttled = writes.filter((event) => event.responseStatus?.code === 429);
    assert.ok(throttled.length > 0, "the apiserver refused some of the gateway's writes with 429");
    const gapsMs: number[] = [];
    for (const refusal of throttled) {
      const target = targetOf(refusal);
      const again = writes.find(
        (event) => targetOf(event) === target && event.requestReceivedTimestamp > refusal.stageTimestamp,
      );
      assert.ok(again, `${target}: the refused write was tried again`);
      gapsMs.push(Date.parse(again.requestReceivedTimestamp) - Date.parse(refusal.stageTimestamp));
    }
    t.diagnostic(
      `${OBJECTS} objects in ${seconds.toFixed(1)} s, ${calls.length} calls; the gateway's flow: ${dispatched} requests dispatched, ${refused} refused (${throttled.length} of them writes); tried again ${Math.min(...gapsMs)}–${Math.max(...gapsMs)} ms after a 429`,
    );
    // Retry-After is at least 1 s: a retry on the client's own backoff (250 ms) would come sooner.
    assert.ok(Math.min(...gapsMs) >= 990, `no write tried again before its Retry-After: ${gapsMs}`);
    // Retries that all came back at once would be refused again together, round after round.
    assert.ok(refused < 2 * OBJECTS, `no storm of refusals: ${refused} for ${OBJECTS} objects`);
    assert.deepEqual(new Set(calls), new Set(names), 'every object called');
  });

  it('a competing writer changing and deleting objects while they are handled (422 to a guarded write, 404): the gateway looks again, writes nothing over them, and serves on', async (t) => {
    const namespace = await cluster.namespace();
    const path = `/apis/kopf.dev/v1/namespaces/${namespace}/kopfexamples`;
    const calls: string[] = [];
    /** Calls that wait, their handler entered, until the test lets them go on. */
    const held = new Map([
      ['delete contested', turnstile()],
      ['create vanishing', turnstile()],
    ]);
    const call = async (what: string) => {
      calls.push(what);
      const gate = held.get(what);
      gate?.entered.resolve();
      await gate?.released.promise;
    };
    const op = operator({ name: 'contested', secret: TEST_SECRET });
    op.on.create('kopfexamples', async function create_fn({ name }) {
      await call(`create ${name}`);
      return { created: name };
    });
    op.on.delete('kopfexamples', async function delete_fn({ name }) {
      await call(`delete ${name}`);
    });
    const logger = memoryLogger();
    const running = await runOperator(op, {
      namespaces: [namespace],
      kubeconfig: cluster.kubeconfig(),
      logger,
      transport: 'in-process',
    });
    t.after(() => running.stop());
    const gate = (what: string) => held.get(what) as ReturnType<typeof turnstile>;

    // The object changes while its delete handler runs; the finalizer's removal, a JSON Patch guarded by
    // a test of the resourceVersion it was computed from, is refused (the apiserver answers a failed
    // test 422, a stale merge patch 409), and made again from the object as it is now.
    await createKopfExamples(namespace, ['contested'], {}, cluster.client);
    await eventually('contested handled', async () =>
      (await createResults(namespace, cluster.client)).has('contested') ? true : undefined,
    );
    await cluster.client.request(`${path}/contested`, { method: 'DELETE' });
    await gate('delete contested').entered.promise;
    await cluster.client.patch(`${path}/contested`, 'merge', { spec: { field: 'changed meanwhile' } });
    gate('delete contested').released.resolve();

    // 404: the object goes (its finalizer taken off by someone else) while its create handler runs.
    await createKopfExamples(namespace, ['vanishing'], {}, cluster.client);
    await gate('create vanishing').entered.promise;
    await cluster.client.patch(`${path}/vanishing`, 'json', [{ op: 'remove', path: '/metadata/finalizers' }]);
    await cluster.client.request(`${path}/vanishing`, { method: 'DELETE' });
    gate('create vanishing').released.resolve();

    // The gateway serves on: an object created after both is handled.
    await createKopfExamples(namespace, ['after'], {}, cluster.client);
    await eventually('contested and vanishing gone, after handled', async () => {
      const list = await cluster.client.get<{ items: KubernetesObject[] }>(path);
      const names = list.items.map((item) => item.metadata.name);
      return names.join() === 'after' && list.items[0]?.status?.create_fn ? true : undefined;
    });

    const refusals = (await auditEvents(cluster))
      .filter((event) => event.objectRef?.namespace === namespace && event.verb === 'patch')
      .filter((event) => [404, 409, 422].includes(event.responseStatus?.code ?? 0))
      .map((event) => `${event.objectRef?.name} ${event.responseStatus?.code}`);
    assert.ok(
      refusals.some((refusal) => /^contested (409|422)$/.test(refusal)),
      `the guarded removal of contested's finalizer was refused: ${refusals}`,
    );
    assert.ok(refusals.includes('vanishing 404'), `the result for vanishing found it gone: ${refusals}`);
    assert.deepEqual(
      calls.toSorted(),
      ['create after', 'create contested', 'create vanishing', 'delete contested'],
      'each handler called once: no call made again for a refused write',
    );
    const troubles = logger.lines.filter((line) => /WARNING|ERROR/.test(line));
    assert.deepEqual(troubles, [], 'refusals of a competing writer are no trouble to report');
  });
});

/** A call's two moments: its handler entered, and the test letting it go on. */
function turnstile() {
  return { entered: Promise.withResolvers<void>(), released: Promise.withResolvers<void>() };
}

/** Objects created before the gateway starts, so that its first writes go out together. */
const OBJECTS = 40;
const THROTTLED = 'causeway-test-throttled';

interface AuditEvent {
  verb: string;
  user: { username: string };
  objectRef?: { resource: string; namespace?: string; name?: string; subresource?: string };
  responseStatus?: { code: number };
  requestReceivedTimestamp: string;
  stageTimestamp: string;
}

async function auditEvents(cluster: PrivateCluster): Promise<AuditEvent[]> {
  const text = await readFile(cluster.controlPlane.auditLogPath as string, 'utf8');
  return text
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as AuditEvent);
}

/** What a write changes: the same for a request and its retries. */
function targetOf({ verb, objectRef }: AuditEvent): string {
  return `${verb} ${objectRef?.resource}/${objectRef?.name}${objectRef?.subresource ? `/${objectRef.subresource}` : ''}`;
}
