/** Kopf's daemons on a real apiserver, over HTTP: one call open per object, stopped with a reason. */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { operator } from '../../functions/index.ts';
import type { KubeClient } from '../../gateway/kube/client.ts';
import type { KubernetesObject } from '../../protocol/index.ts';
import { testNamespace } from '../support/cluster.ts';
import {
  applyFile,
  createKopfExample,
  eventually,
  kubeClient,
  runOperator,
  TEST_SECRET,
} from '../support/operator.ts';

/** Resolves when the signal aborts. */
const abortedOf = (signal: AbortSignal) =>
  new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));

describe('daemons', () => {
  let client: KubeClient;
  before(async () => {
    await applyFile(new URL('../../examples/01-minimal/crd.yaml', import.meta.url));
    client = await kubeClient();
  });
  const read = (path: string) => client.get<KubernetesObject>(path);
  const gone = (path: string) =>
    eventually(`${path} gone`, () =>
      client.request(path, { method: 'GET' }).then(
        () => undefined,
        () => true,
      ),
    );

  it('runs one call per object, ends its rounds and calls again, and holds a deletion until it has returned', async (t) => {
    const namespace = await testNamespace(t);
    const log: string[] = [];
    let returnedAt = 0;
    const op = operator({ name: 'daemons', secret: TEST_SECRET });
    op.on.daemon('kopfexamples', async function watcher_fn({ name, stopped, memo }) {
      const round = ((memo.rounds as number | undefined) ?? 0) + 1;
      memo.rounds = round;
      log.push(`${name} round ${round} started`);
      await abortedOf(stopped as AbortSignal);
      log.push(`${name} round ${round} stopped: ${(stopped as AbortSignal).reason}`);
      if ((stopped as AbortSignal).reason === 'resource-deleted') {
        await sleep(1000); // its cleanup: the object waits for it
        returnedAt = Date.now();
      }
    });
    const running = await runOperator(op, {
      namespaces: [namespace],
      settings: { calls: { daemonRoundMs: 1500 } },
    });
    t.after(() => running.stop());

    const path = await createKopfExample(namespace, 'watched');
    await eventually('a second round', async () =>
      log.includes('watched round 2 started') ? true : undefined,
    );
    assert.deepEqual(log.slice(0, 3), [
      'watched round 1 started',
      'watched round 1 stopped: round-ended',
      'watched round 2 started',
    ]);
    assert.ok((await read(path)).metadata.finalizers?.length, 'the daemon holds the object with a finalizer');

    await client.request(path, { method: 'DELETE' });
    await gone(path);
    const goneAt = Date.now();
    assert.ok(
      log.some((line) => line.endsWith('stopped: resource-deleted')),
      log.join('\n'),
    );
    assert.ok(returnedAt > 0 && returnedAt <= goneAt, 'the object went before its daemon returned');
  });

  it('stops when the object no longer matches, starts again when it does, and is not called again after returning until the object changes', async (t) => {
    const namespace = await testNamespace(t);
    const reasons: string[] = [];
    const starts = new Map<string, number>();
    const op = operator({ name: 'daemon-filters', secret: TEST_SECRET });
    op.on.daemon('kopfexamples', { labels: { watched: 'yes' } }, async function labelled_fn({ stopped }) {
      starts.set('labelled', (starts.get('labelled') ?? 0) + 1);
      await abortedOf(stopped as AbortSignal);
      reasons.push(String((stopped as AbortSignal).reason));
    });
    op.on.daemon('kopfexamples', async function once_fn({ spec }) {
      starts.set('once', (starts.get('once') ?? 0) + 1);
      return undefined === spec.size ? undefined : undefined;
    });
    op.on.update('kopfexamples', function update_fn({ spec }) {
      return { size: spec.size };
    });
    const running = await runOperator(op, { namespaces: [namespace] });
    t.after(() => running.stop());

    const path = await createKopfExample(namespace, 'filtered', { size: 1 }, { labels: { watched: 'yes' } });
    await eventually('both daemons started', async () =>
      starts.get('labelled') === 1 && starts.get('once') === 1 ? true : undefined,
    );
    await client.patch(path, 'merge', { metadata: { labels: { watched: null } } });
    await eventually('the labelled daemon stopped', async () => (reasons.length === 1 ? true : undefined));
    assert.deepEqual(reasons, ['filters-mismatch']);
    await client.patch(path, 'merge', { metadata: { labels: { watched: 'yes' } } });
    await eventually('the labelled daemon started again', async () =>
      starts.get('labelled') === 2 ? true : undefined,
    );
    // Label changes are changes too, so the daemon that returned may have run again; a spec change
    // that its update handler has seen is the positive sign that it would have by now.
    const onceBefore = starts.get('once') ?? 0;
    await client.patch(path, 'merge', { spec: { size: 2 } });
    await eventually('the update handled', async () =>
      ((await read(path)).status?.update_fn as { size?: number } | undefined)?.size === 2 ? true : undefined,
    );
    await eventually('the returned daemon called again after the change', async () =>
      (starts.get('once') ?? 0) > onceBefore ? true : undefined,
    );
  });

  it('cuts off a daemon that ignores being stopped once its cancellationTimeout has passed', async (t) => {
    const namespace = await testNamespace(t);
    let started = 0;
    const op = operator({ name: 'stubborn', secret: TEST_SECRET });
    op.on.daemon('kopfexamples', { cancellationTimeout: 1 }, async function stubborn_fn() {
      started++;
      await sleep(60_000); // never looks at `stopped`
    });
    const running = await runOperator(op, {
      namespaces: [namespace],
      settings: { calls: { daemonRoundMs: 120_000 } },
    });
    t.after(() => running.stop());

    const path = await createKopfExample(namespace, 'stubborn');
    await eventually('the daemon started', async () => (started === 1 ? true : undefined));
    const deleting = Date.now();
    await client.request(path, { method: 'DELETE' });
    await gone(path);
    assert.ok(Date.now() - deleting < 30_000, 'the deletion waited for the round instead of the timeout');
  });
});
