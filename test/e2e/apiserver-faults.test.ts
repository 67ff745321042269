/**
 * The control plane killed under the gateway: kube-apiserver, then etcd, each killed with SIGKILL
 * while the gateway works through a backlog of creations and of deletions held by its finalizer, and
 * started again on the same port and data; more objects are created as soon as it is back. No change
 * is missed; none is handled twice, beyond a call that was in flight at the kill (called again with the
 * same idempotency key); the gateway reconnects by itself, and says once, not once per watch, that the
 * API was unreachable and once that it is back.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { apiRequest } from '../../deploy/control-plane/https.ts';
import type { RestartableComponent } from '../../deploy/control-plane/index.ts';
import { operator } from '../../functions/index.ts';
import type { KubernetesObject } from '../../protocol/index.ts';
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

/** Objects handled at once: few, so that the backlog is still being worked through at the kill. */
const CONCURRENCY = 4;
const CREATED = 30;
const DELETED = 15;
/** Created once the killed component is back. */
const AFTERWARDS = 5;
/** The kill comes once this many calls of the second phase were made. */
const CALLS_BEFORE_KILL = 10;

const UNREACHABLE = /Kubernetes API unreachable/;
/** The apiserver stays down until the watch has found no one this many times: its backoff is 8 s by then. */
const REFUSED_WATCHES = 5;
/** What is created once the apiserver is back is handled within this: not at the end of the grown backoff. */
const HANDLED_AFTER_RESTART_MS = 10_000;

interface Call {
  handler: 'create' | 'delete';
  name: string;
  key: string;
}

describe('the control plane killed under the gateway', () => {
  let cluster: PrivateCluster;
  before(async () => {
    cluster = await startPrivateCluster();
  });
  after(() => cluster?.stop());

  for (const component of ['kube-apiserver', 'etcd'] satisfies RestartableComponent[]) {
    it(`${component} killed -9 amid creations and deletions: nothing missed, nothing handled twice`, async (t) => {
      const namespace = await cluster.namespace();
      const path = `/apis/kopf.dev/v1/namespaces/${namespace}/kopfexamples`;
      const calls: Call[] = [];
      let onCall = () => {};
      const op = operator({ name: 'faults', secret: TEST_SECRET });
      op.on.create('kopfexamples', async function create_fn({ name, idempotencyKey }) {
        calls.push({ handler: 'create', name, key: idempotencyKey });
        onCall();
        return { created: name };
      });
      // A delete handler: the gateway holds each object with its finalizer until it has run.
      op.on.delete('kopfexamples', async function delete_fn({ name, idempotencyKey }) {
        calls.push({ handler: 'delete', name, key: idempotencyKey });
        onCall();
      });
      const logger = memoryLogger();
      const running = await runOperator(op, {
        namespaces: [namespace],
        kubeconfig: cluster.kubeconfig(),
        logger,
        transport: 'in-process',
        settings: { processing: { concurrency: CONCURRENCY } },
      });
      t.after(() => running.stop());

      // First phase: objects to delete later, handled before the kill.
      const doomed = objectNames('doomed', DELETED);
      await createKopfExamples(namespace, doomed, {}, cluster.client);
      await eventually(`the ${DELETED} objects to delete handled`, async () =>
        (await createResults(namespace, cluster.client)).size === DELETED ? true : undefined,
      );

      // Second phase: a backlog of creations and the deletions, killed in the middle of it.
      const before = calls.length;
      const enoughCalls = Promise.withResolvers<void>();
      onCall = () => {
        if (calls.length - before >= CALLS_BEFORE_KILL) enoughCalls.resolve();
      };
      const created = objectNames('kex', CREATED);
      await Promise.all([
        createKopfExamples(namespace, created, {}, cluster.client),
        ...doomed.map((name) => cluster.client.request(`${path}/${name}`, { method: 'DELETE' })),
      ]);
      await enoughCalls.promise;
      // Read just before the kill: a result stored later may be a call's in flight at the kill.
      const storedBeforeKill = new Set((await createResults(namespace, cluster.client)).keys());
      const callsBeforeKill = calls.length;
      const killed = performance.now();
      await cluster.controlPlane.restart(component, {
        kill: 'SIGKILL',
        // Not started again before the outage shows where it should: to the gateway, which cannot
        // connect, or (etcd's) to the apiserver, whose etcd check fails.
        // The apiserver's for long enough that the watch's backoff has grown (to 8 s, 4 to 12 s jittered).
        whileDown: () =>
          component === 'kube-apiserver'
            ? eventually(
                `the gateway to find the API unreachable, its watch refused ${REFUSED_WATCHES} times`,
                async () =>
                  logger.lines.some((line) => UNREACHABLE.test(line)) &&
                  logger.lines.filter((line) => /watch failed.*ECONNREFUSED/.test(line)).length >=
                    REFUSED_WATCHES
                    ? true
                    : undefined,
                30_000,
              )
            : eventually('the apiserver to find etcd gone', async () => {
                const response = await apiRequest(cluster.controlPlane, 'GET', '/readyz/etcd');
                return response.status === 200 ? undefined : true;
              }),
      });
      const restarted = performance.now();
      // Made as soon as the component is back, while the gateway's watch may still wait to reconnect:
      // its resumed watch must show them.
      const afterwards = objectNames('after', AFTERWARDS);
      await createKopfExamples(namespace, afterwards, {}, cluster.client);
      const afterwardsHandled = eventually(
        'the objects created after the restart handled',
        async () =>
          afterwards.every((name) => calls.some((call) => call.name === name))
            ? performance.now()
            : undefined,
        60_000,
      );
      await eventually(
        'every object created handled and every object deleted gone',
        async () => {
          const list = await cluster.client.get<{ items: KubernetesObject[] }>(path);
          const handled = list.items.filter((item) => item.status?.create_fn).length;
          const expected = CREATED + AFTERWARDS;
          return handled === expected && list.items.length === expected ? true : undefined;
        },
        60_000,
      );
      const afterRestartMs = (await afterwardsHandled) - restarted;
      t.diagnostic(
        `${component}: down ${((restarted - killed) / 1000).toFixed(1)} s; the objects created then handled ${(afterRestartMs / 1000).toFixed(1)} s after it was back, all ${((performance.now() - restarted) / 1000).toFixed(1)} s after; ${calls.length - before} calls in the second phase`,
      );
      assert.ok(
        afterRestartMs < HANDLED_AFTER_RESTART_MS,
        `the objects created once it was back handled within ${HANDLED_AFTER_RESTART_MS / 1000} s: ${afterRestartMs} ms`,
      );

      for (const handler of ['create', 'delete'] as const) {
        const names = handler === 'create' ? [...doomed, ...created, ...afterwards] : doomed;
        const byName = Map.groupBy(
          calls.filter((call) => call.handler === handler),
          (call) => call.name,
        );
        assert.deepEqual([...byName.keys()].sort(), names.toSorted(), `every ${handler} handler was called`);
        const repeated = [...byName].filter(([, ofName]) => ofName.length > 1);
        for (const [name, ofName] of repeated) {
          assert.equal(new Set(ofName.map((call) => call.key)).size, 1, `${name}: one idempotency key`);
        }
        assert.ok(
          repeated.length <= CONCURRENCY,
          `only calls in flight at the kill were made again: ${repeated.map(([name]) => name)}`,
        );
      }
      const calledAgain = calls
        .slice(callsBeforeKill)
        .filter((call) => call.handler === 'create' && storedBeforeKill.has(call.name));
      assert.deepEqual(calledAgain, [], 'no object called again once its result was stored');
      // However many watches and writes retried meanwhile: one line when the API went, one when it came back.
      const warnings = logger.lines.filter((line) => /WARNING|ERROR/.test(line));
      const outage =
        component === 'kube-apiserver' ? 1 : warnings.filter((line) => UNREACHABLE.test(line)).length;
      assert.equal(warnings.length, outage, `no warning but the outage's:\n${warnings.join('')}`);
      assert.equal(
        logger.lines.filter((line) => UNREACHABLE.test(line)).length,
        outage,
        'the outage is said once',
      );
      assert.equal(
        logger.lines.filter((line) => /Kubernetes API reachable again/.test(line)).length,
        outage,
        'and its end once',
      );
    });
  }
});
