/** Kopf's timers on a real apiserver: cadence, idleness, errors, and when they stop. */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { countWrites } from '../../bench/metrics.ts';
import { operator, PermanentError, TemporaryError } from '../../functions/index.ts';
import { applyManifests } from '../../gateway/kube/apply.ts';
import type { KubeClient } from '../../gateway/kube/client.ts';
import type { KubernetesObject } from '../../protocol/index.ts';
import { testNamespace } from '../support/cluster.ts';
import { customResourceDefinition, uniqueGroup } from '../support/crds.ts';
import {
  applyFile,
  createKopfExample,
  eventually,
  kubeClient,
  runOperator,
  TEST_SECRET,
} from '../support/operator.ts';

describe('timers', () => {
  let client: KubeClient;
  /** A resource of its own, so that the apiserver's count of its writes is this test's alone. */
  const steadyKind = { group: uniqueGroup('timers'), kind: 'Steady', plural: 'steadies' };
  before(async () => {
    await applyFile(new URL('../../examples/01-minimal/crd.yaml', import.meta.url));
    client = await kubeClient();
    await applyManifests(client, [customResourceDefinition(steadyKind)], { fieldManager: 'causeway-tests' });
  });
  /** The patches of steadies (deleting other tests' namespaces deletes steadies too: not ours). */
  const steadyWrites = async () => {
    const { byRequest } = countWrites(
      await client.request<string>('/metrics'),
      [steadyKind.plural],
      steadyKind.group,
    );
    return Object.entries(byRequest).filter(([request]) => request.startsWith('PATCH '));
  };
  const read = (path: string) => client.get<KubernetesObject>(path);
  /** Calls per object name, and when each came. */
  const recorder = () => {
    const calls = new Map<string, number[]>();
    return {
      calls,
      record: (name: string) => calls.set(name, [...(calls.get(name) ?? []), Date.now()]),
      count: (name: string) => calls.get(name)?.length ?? 0,
      atLeast: (name: string, times: number) =>
        eventually(`${times} calls for ${name}`, async () =>
          (calls.get(name)?.length ?? 0) >= times ? true : undefined,
        ),
    };
  };

  it('calls every interval, never overlapping, and writes a result only when it changes', async (t) => {
    const namespace = await testNamespace(t);
    const steady = recorder();
    const counting = recorder();
    let running = 0;
    let overlapped = false;
    const op = operator({ name: 'timers', secret: TEST_SECRET });
    // Slower than its interval: the next call waits for the one before.
    op.on.timer(
      `${steadyKind.plural}.${steadyKind.group}`,
      { interval: 0.2 },
      async function steady_fn({ name }) {
        running++;
        overlapped ||= running > 1;
        steady.record(name);
        await sleep(300);
        running--;
        return { state: 'fine' };
      },
    );
    op.on.timer('kopfexamples', { interval: 0.2 }, function counting_fn({ name }) {
      counting.record(name);
      return { calls: counting.count(name) };
    });
    const operatorRun = await runOperator(op, { namespaces: [namespace], transport: 'in-process' });
    t.after(() => operatorRun.stop());

    const steadyPath = `/apis/${steadyKind.group}/v1/namespaces/${namespace}/${steadyKind.plural}/steady`;
    await client.request(steadyPath.slice(0, steadyPath.lastIndexOf('/')), {
      method: 'POST',
      body: { apiVersion: `${steadyKind.group}/v1`, kind: steadyKind.kind, metadata: { name: 'steady' } },
    });
    const countingPath = await createKopfExample(namespace, 'counting');
    const written = async (path: string, id: string) =>
      eventually(`the result of ${id}`, async () => {
        const object = await read(path);
        return object.status?.[id] ? object : undefined;
      });
    await written(steadyPath, 'steady_fn');
    const countingWritten = await written(countingPath, 'counting_fn');
    const writesBefore = await steadyWrites();
    await steady.atLeast('steady', steady.count('steady') + 3);
    await counting.atLeast('counting', counting.count('counting') + 3);

    // The same result is not written again: not a request (an unchanged patch would not even show).
    assert.deepEqual(await steadyWrites(), writesBefore);
    const counted = (object: KubernetesObject) =>
      (object.status?.counting_fn as { calls?: number } | undefined)?.calls ?? 0;
    assert.ok(counted(await read(countingPath)) > counted(countingWritten), 'a changed result is written');
    assert.equal(overlapped, false, 'a call started while the one before ran');
    const times = steady.calls.get('steady') ?? [];
    const gaps = times.slice(1).map((at, index) => at - (times[index] as number));
    assert.ok(
      gaps.every((gap) => gap >= 480),
      `calls 0.3 s long, 0.2 s apart: gaps ${gaps}`,
    );
  });

  it('waits for the object to be idle (a status write is no change), and for the initial delay', async (t) => {
    const namespace = await testNamespace(t);
    const idle = recorder();
    const delayed = recorder();
    const op = operator({ name: 'idle-timers', secret: TEST_SECRET });
    op.on.timer('kopfexamples', { interval: 0.2, idle: 1.5 }, function idle_fn({ name }) {
      idle.record(name);
    });
    op.on.timer('kopfexamples', { interval: 0.2, initialDelay: 1.5 }, function delayed_fn({ name }) {
      delayed.record(name);
    });
    const operatorRun = await runOperator(op, { namespaces: [namespace], transport: 'in-process' });
    t.after(() => operatorRun.stop());

    const created = Date.now();
    const path = await createKopfExample(namespace, 'busy', { round: 0 });
    // Changed every 0.3 s for 2 s: never idle for 1.5 s meanwhile.
    let lastChange = Date.now();
    for (let round = 1; round <= 7; round++) {
      await sleep(300);
      await client.patch(path, 'merge', { spec: { round } });
      lastChange = Date.now();
    }
    // A status written meanwhile is no change (as in Kopf): a timer's own result would be one otherwise.
    await sleep(1000);
    await client.patch(`${path}/status`, 'merge', { status: { note: 'written' } });
    const statusWritten = Date.now();
    await idle.atLeast('busy', 2);
    await delayed.atLeast('busy', 1);
    const [firstIdle] = idle.calls.get('busy') ?? [];
    const [firstDelayed] = delayed.calls.get('busy') ?? [];
    assert.ok((firstIdle as number) - lastChange >= 1400, 'called before 1.5 s without a change');
    // Had the status write made it wait again, the call would come 1.5 s after the gateway saw the write,
    // which is at most a few ms before the test got its answer: any time under that leaves room for load.
    assert.ok((firstIdle as number) - statusWritten < 1450, 'the status write made the timer wait again');
    assert.ok((firstDelayed as number) - created >= 1400, 'called before its initial delay');
    assert.ok((firstDelayed as number) < lastChange, 'the initial delay waits for no idleness');
  });

  it('retries temporary errors, stops on a permanent one until the object changes, and stops with its filters and the object', async (t) => {
    const namespace = await testNamespace(t);
    const flaky = recorder();
    const broken = recorder();
    const labelled = recorder();
    const witness = recorder();
    const retries: number[] = [];
    const op = operator({ name: 'failing-timers', secret: TEST_SECRET });
    op.on.timer('kopfexamples', { interval: 5 }, function flaky_fn({ name, retry }) {
      flaky.record(name);
      if (name === 'failing') retries.push(retry);
      if (retry < 2) throw new TemporaryError('not yet', { delay: 0.2 });
      return { retried: retry };
    });
    op.on.timer('kopfexamples', { interval: 0.2 }, function broken_fn({ name, spec }) {
      broken.record(name);
      if (!spec.fixed) throw new PermanentError('broken for good');
      return { fixed: true };
    });
    op.on.timer('kopfexamples', { interval: 0.2, labels: { timed: 'yes' } }, function labelled_fn({ name }) {
      labelled.record(name);
    });
    op.on.timer('kopfexamples', { interval: 0.2 }, function witness_fn({ name }) {
      witness.record(name);
    });
    const operatorRun = await runOperator(op, { namespaces: [namespace], transport: 'in-process' });
    t.after(() => operatorRun.stop());

    const path = await createKopfExample(namespace, 'failing', {}, { labels: { timed: 'yes' } });
    const other = await createKopfExample(namespace, 'other');
    const flakyResult = await eventually(
      'the retried result',
      async () => (await read(path)).status?.flaky_fn,
    );
    assert.deepEqual(flakyResult, { retried: 2 });
    assert.deepEqual(retries.slice(0, 3), [0, 1, 2]);
    await labelled.atLeast('failing', 1);

    // The permanent failure stopped the broken timer: the witness ticks on while it stays silent.
    const brokenCalls = broken.count('failing');
    await witness.atLeast('failing', witness.count('failing') + 3);
    assert.equal(broken.count('failing'), brokenCalls);
    assert.equal(brokenCalls, 1);
    const events = await client.get<{ items: Array<{ reason: string; message: string }> }>(
      `/api/v1/namespaces/${namespace}/events`,
    );
    assert.ok(
      events.items.some((event) => event.reason === 'HandlerFailed' && event.message.includes('broken_fn')),
    );

    // A change of the object starts it again; losing its label stops the labelled one.
    await client.patch(path, 'merge', { spec: { fixed: true }, metadata: { labels: { timed: null } } });
    await eventually('the fixed result', async () => (await read(path)).status?.broken_fn);
    const labelledCalls = labelled.count('failing');
    await witness.atLeast('failing', witness.count('failing') + 3);
    assert.equal(labelled.count('failing'), labelledCalls);

    // Deleted: its timers stop, while the other object's go on.
    await client.request(path, { method: 'DELETE' });
    await eventually(
      'the object gone',
      async () =>
        await client.request(path, { method: 'GET' }).then(
          () => undefined,
          () => true,
        ),
    );
    const witnessCalls = witness.count('failing');
    await witness.atLeast('other', witness.count('other') + 3);
    assert.equal(witness.count('failing'), witnessCalls);
    assert.ok(other);
  });
});
