/**
 * Gateways of one identity, peering through Leases on the real control plane: one leads and handles,
 * the others stand by; the leader's stop hands over to the next, with no object handled by both at
 * once; a gateway of a higher priority (`--dev`) pauses the running one and hands back when it stops;
 * a leader that can no longer renew its Lease stops at the renew deadline, before another takes over.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { operator } from '../../functions/index.ts';
import { DEV_PRIORITY } from '../../gateway/index.ts';
import type { KubernetesObject } from '../../protocol/index.ts';
import { testCluster, testNamespace } from '../support/cluster.ts';
import { assertCalledOnceButAfterFencedWrites } from '../support/fencing.ts';
import { startLaggingProxy } from '../support/lagging-proxy.ts';
import {
  applyFile,
  createKopfExamples,
  createResults,
  eventually,
  kubeClient,
  memoryLogger,
  objectNames,
  runOperator,
} from '../support/operator.ts';

const CRD = new URL('../../examples/01-minimal/crd.yaml', import.meta.url);

interface Call {
  gateway: string;
  name: string;
  key: string;
  started: number;
  ended: number;
}

/** The operator each gateway runs in its process, recording every call of its handlers as that gateway's. */
function recordingOperator(gateway: string, calls: Call[], options: { timer?: boolean } = {}) {
  const op = operator({ name: 'peering' });
  op.on.create('kopfexamples', async function create_fn({ name, idempotencyKey }) {
    const started = Date.now();
    await sleep(20); // a handler that takes a while: some calls are in flight at any moment
    calls.push({ gateway, name, key: idempotencyKey, started, ended: Date.now() });
    return { by: gateway };
  });
  if (options.timer) {
    op.on.timer('kopfexamples', { interval: 0.2 }, function tick_fn({ name }) {
      const now = Date.now();
      calls.push({ gateway, name, key: 'timer', started: now, ended: now });
    });
  }
  return op;
}

describe('peering', () => {
  it('lets one of two gateways lead, and hands over to the other when it stops, no object handled by both', async (t) => {
    await applyFile(CRD);
    const namespace = await testNamespace(t);
    const calls: Call[] = [];
    const settings = { processing: { concurrency: 4 } };
    const firstLog = memoryLogger();
    const first = await runOperator(recordingOperator('first', calls), {
      namespaces: [namespace],
      transport: 'in-process',
      peering: { namespace, id: 'first' },
      settings,
      logger: firstLog,
    });
    t.after(() => first.stop());
    await eventually('the first gateway leading', async () => first.gateway.handling || undefined);
    const secondLog = memoryLogger();
    const second = await runOperator(recordingOperator('second', calls), {
      namespaces: [namespace],
      transport: 'in-process',
      peering: { namespace, id: 'second' },
      settings,
      logger: secondLog,
    });
    t.after(() => second.stop());
    await eventually(
      'the second gateway following the first',
      async () => secondLog.lines.some((line) => line.includes('follows "first"')) || undefined,
    );

    const names = objectNames('kex', 300);
    await createKopfExamples(namespace, names);
    await eventually('the first gateway well into the backlog', async () => calls.length >= 60 || undefined);
    await first.stop();
    const stoppedAt = Date.now();
    await eventually('the second gateway leading', async () => second.gateway.handling || undefined);
    const results = await eventually(
      'every object handled',
      async () => {
        const found = await createResults(namespace);
        return found.size === names.length ? found : undefined;
      },
      60_000,
    );

    const byFirst = calls.filter((call) => call.gateway === 'first');
    const bySecond = calls.filter((call) => call.gateway === 'second');
    t.diagnostic(
      `first: ${byFirst.length} calls; second: ${bySecond.length}; second led ${Date.now() - stoppedAt} ms after the stop`,
    );
    assert.ok(byFirst.length >= 60 && bySecond.length > 0, 'both gateways handled a part of the backlog');
    assert.ok(
      Math.max(...byFirst.map((call) => call.ended)) < Math.min(...bySecond.map((call) => call.started)),
      'the first gateway had finished every call before the second made one',
    );
    assertCalledOnceButAfterFencedWrites(
      calls,
      new Map([
        ['first', firstLog],
        ['second', secondLog],
      ]),
      t,
    );
    for (const [name, result] of results) {
      const call = calls.findLast((each) => each.name === name);
      assert.deepEqual(
        result,
        { by: call?.gateway },
        `${name}'s result is from the gateway that called it last`,
      );
    }
  });

  it('pauses a gateway while one of a higher priority runs, with its timers, and resumes when it stops', async (t) => {
    await applyFile(CRD);
    const namespace = await testNamespace(t);
    const calls: Call[] = [];
    const deployedLog = memoryLogger();
    const deployed = await runOperator(recordingOperator('deployed', calls, { timer: true }), {
      namespaces: [namespace],
      transport: 'in-process',
      peering: { namespace, id: 'deployed' },
      logger: deployedLog,
    });
    t.after(() => deployed.stop());
    await eventually('the deployed gateway leading', async () => deployed.gateway.handling || undefined);
    await createKopfExamples(namespace, objectNames('kex', 2));
    const ticks = (gateway: string, after = 0) =>
      calls.filter((call) => call.key === 'timer' && call.gateway === gateway && call.started > after);
    await eventually(
      'timers on the deployed gateway',
      async () => ticks('deployed').length >= 4 || undefined,
    );

    const dev = await runOperator(recordingOperator('dev', calls, { timer: true }), {
      namespaces: [namespace],
      transport: 'in-process',
      peering: { namespace, id: 'laptop', priority: DEV_PRIORITY },
    });
    let devStopped = false;
    t.after(() => (devStopped ? undefined : dev.stop()));
    await eventually('the dev gateway leading', async () => dev.gateway.handling || undefined);
    assert.equal(deployed.gateway.handling, false, 'the deployed gateway is paused');
    assert.ok(
      deployedLog.lines.some((line) => line.includes(`paused by a higher priority (${DEV_PRIORITY})`)),
      'the deployed gateway says why it pauses',
    );
    await eventually('timers on the dev gateway', async () => ticks('dev').length >= 6 || undefined);
    const devFirst = Math.min(...ticks('dev').map((call) => call.started));
    assert.deepEqual(ticks('deployed', devFirst), [], 'the paused gateway ran no timer once the dev one led');

    await dev.stop();
    devStopped = true;
    const handedBack = Date.now();
    await eventually(
      'the deployed gateway leading again',
      async () => deployed.gateway.handling || undefined,
    );
    await eventually(
      'timers on the deployed gateway again',
      async () => ticks('deployed', handedBack).length >= 2 || undefined,
    );
    const devLast = Math.max(...ticks('dev').map((call) => call.ended));
    const resumedFirst = Math.min(...ticks('deployed', devFirst).map((call) => call.started));
    assert.ok(
      devLast < resumedFirst,
      'the dev gateway had stopped its timers before the deployed one resumed',
    );
  });

  it('stops a leader that cannot renew its Lease at the renew deadline, before the other takes over', async (t) => {
    await applyFile(CRD);
    const namespace = await testNamespace(t);
    const calls: Call[] = [];
    // The first gateway reaches the apiserver through a proxy that will refuse its Lease requests.
    const proxy = await startLaggingProxy(await testCluster());
    t.after(() => proxy.close());
    const cutLog = memoryLogger();
    const cut = await runOperator(recordingOperator('cut', calls, { timer: true }), {
      namespaces: [namespace],
      transport: 'in-process',
      peering: { namespace, id: 'cut' },
      kubeconfig: proxy.kubeConfig(),
      logger: cutLog,
    });
    t.after(() => cut.stop());
    await eventually('the first gateway leading', async () => cut.gateway.handling || undefined);
    const otherLog = memoryLogger();
    const other = await runOperator(recordingOperator('other', calls, { timer: true }), {
      namespaces: [namespace],
      transport: 'in-process',
      peering: { namespace, id: 'other' },
      logger: otherLog,
    });
    t.after(() => other.stop());
    await createKopfExamples(namespace, objectNames('kex', 1));
    const ticks = (gateway: string) =>
      calls.filter((call) => call.key === 'timer' && call.gateway === gateway);
    await eventually('timers on the first gateway', async () => ticks('cut').length >= 3 || undefined);

    proxy.refuseLeases(true);
    const cutAt = Date.now();
    await eventually(
      'the first gateway stopping at its renew deadline',
      async () =>
        cutLog.lines.some((line) => line.includes('stops leading: its Lease was not renewed within 10s')) ||
        undefined,
      20_000,
    );
    const stoppedAt = Date.now();
    await eventually('the other gateway leading', async () => other.gateway.handling || undefined, 30_000);
    await eventually('timers on the other gateway', async () => ticks('other').length >= 2 || undefined);
    t.diagnostic(`stopped ${stoppedAt - cutAt} ms after the cut; the other leads after it`);
    // Its writes are refused from the deadline (10 s) on; it says so at its next look, within the Lease's 15 s.
    assert.ok(stoppedAt - cutAt < 15_000, 'it stopped before its Lease could be taken for gone');
    const lastCut = Math.max(...ticks('cut').map((call) => call.ended));
    const firstOther = Math.min(...ticks('other').map((call) => call.started));
    assert.ok(lastCut < firstOther, 'the cut gateway ran its last timer before the other ran its first');

    proxy.refuseLeases(false);
    await eventually(
      'the first gateway following once it renews again',
      async () => cutLog.lines.some((line) => line.includes('follows "other"')) || undefined,
      20_000,
    );
    assert.equal(cut.gateway.handling, false);
  });

  it('removes its Lease as it stops, even when a renewal it gave up on landed: the Lease moved on behind it', async (t) => {
    await applyFile(CRD);
    const namespace = await testNamespace(t);
    const log = memoryLogger();
    const running = await runOperator(recordingOperator('alone', []), {
      namespaces: [namespace],
      transport: 'in-process',
      peering: { namespace, id: 'alone' },
      // No renewal of its own before the stop: the change below is the only one it does not know of.
      settings: { peering: { leaseDurationS: 120, renewDeadlineS: 90, retryPeriodS: 60 } },
      logger: log,
    });
    t.after(() => running.stop());
    await eventually('the gateway leading', async () => running.gateway.handling || undefined);
    const client = await kubeClient();
    const leases = `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases`;
    const [lease] = (await client.get<{ items: KubernetesObject[] }>(leases)).items;
    assert.ok(lease, 'its Lease');
    // As a renewal whose answer was lost: the Lease as it wrote it, at a resourceVersion it never saw.
    await client.patch(`${leases}/${lease.metadata.name}`, 'merge', {
      spec: { renewTime: new Date().toISOString().replace('Z', '000Z') },
    });
    await running.stop();
    const left = (await client.get<{ items: KubernetesObject[] }>(leases)).items;
    assert.deepEqual(
      left.map((each) => each.metadata.name),
      [],
      `no Lease left to wait out; the log:\n${log.lines.join('\n')}`,
    );
  });
});
