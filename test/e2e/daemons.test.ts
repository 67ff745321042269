/** Kopf's daemons on a real apiserver, over HTTP: one call open per object, stopped with a reason. */
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { operator } from '../../functions/index.ts';
import { startGateway } from '../../gateway/gateway.ts';
import type { KubeClient } from '../../gateway/kube/client.ts';
import { type KubernetesObject, PATHS } from '../../protocol/index.ts';
import { startBeacon } from '../support/beacon.ts';
import { testNamespace } from '../support/cluster.ts';
import {
  applyFile,
  createKopfExample,
  eventually,
  KOPFEXAMPLES_SCOPE,
  kubeClient,
  kubeConfig,
  memoryLogger,
  runOperator,
  TEST_SECRET,
} from '../support/operator.ts';
import { causeway, freePort } from '../support/processes.ts';

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
      await abortedOf(stopped);
      log.push(`${name} round ${round} stopped: ${stopped.reason}`);
      if (stopped.reason === 'resource-deleted') {
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
      await abortedOf(stopped);
      reasons.push(String(stopped.reason));
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

  it('is called again, and runs, once its function service is back after being killed mid-round', async (t) => {
    const namespace = await testNamespace(t);
    // The service as a process of its own (`causeway serve`), killed with SIGKILL while the daemon's call
    // is open, and started again on the same address: nothing but the gateway brings the daemon back.
    const secretFile = join(mkdtempSync(join(tmpdir(), 'causeway-daemon-crash-')), 'secret');
    writeFileSync(secretFile, TEST_SECRET);
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const serve = () =>
      causeway(
        [
          'serve',
          'test/support/daemon-operator.ts',
          ...['--port', String(port), '--host', '127.0.0.1', '--secret-file', secretFile],
        ],
        { ...process.env, CAUSEWAY_SECRET: '' },
      );
    let service = serve();
    t.after(() => service.stop());
    await service.waitFor(/listening on/);
    // Each round calls it as it begins: a positive sign that the daemon's call is open in the service.
    const beacon = await startBeacon();
    t.after(() => beacon.close());
    const begun = (round: number, times: number) =>
      eventually(`round ${round} begun ${times} time(s)`, async () =>
        beacon.hits.filter((hit) => new URLSearchParams(hit).get('round') === String(round)).length >= times
          ? true
          : undefined,
      );
    const logger = memoryLogger();
    const gateway = await startGateway({
      functions: [{ name: 'daemons', url, scope: KOPFEXAMPLES_SCOPE }],
      secret: new TextEncoder().encode(TEST_SECRET),
      kubeconfig: await kubeConfig(),
      namespaces: [namespace],
      logger,
      settings: { calls: { daemonRoundMs: 3000, serviceRetryDelaysS: [0.2, 0.5, 1] } },
    });
    t.after(() => gateway.stop());
    const said = (pattern: RegExp) =>
      logger.lines.filter((line) => line.includes(`[${namespace}/crashing]`) && pattern.test(line));

    const path = await createKopfExample(namespace, 'crashing', { beacon: beacon.url });
    const beats = async () =>
      ((await read(path)).status?.beats as { rounds?: number } | undefined)?.rounds ?? 0;
    // Round 1 answered (its memo kept by the gateway), round 2's call open in the service: kill it.
    await begun(2, 1);
    assert.equal(await beats(), 1, 'round 1 written when its call ended');
    assert.equal(await service.stop('SIGKILL'), 'SIGKILL');

    // The gateway says which call it lost, where, and that it calls again.
    const lost = await eventually(
      'the lost call in the log',
      async () => said(/daemon failed temporarily .*handler=beat_fn/)[0],
    );
    assert.match(
      lost,
      new RegExp(
        `daemon failed temporarily .*handler=beat_fn retry=\\d+ delaySeconds=[\\d.]+ err="POST ${url}${PATHS.invoke}: (other side closed|read ECONNRESET)"`,
      ),
    );

    service = serve();
    // Called again with no help, in the new process, from the memo of the last round that answered
    // (the killed round's memo went with its call), and runs on: its rounds end and are written.
    await begun(2, 2);
    await eventually('round 2 written', async () => ((await beats()) >= 2 ? true : undefined));
    await begun(3, 1);
    assert.equal(
      said(/round 2 stopped: round-ended/).length,
      1,
      'the killed round 2 never answered; the one in the new process did',
    );
    assert.deepEqual(
      beacon.hits.map((hit) => new URLSearchParams(hit).get('round')),
      ['1', '2', '2', '3'],
      'called once per round, and again for the round that was lost',
    );

    await client.request(path, { method: 'DELETE' });
    await gone(path);
    assert.equal(said(/round \d+ stopped: resource-deleted/).length, 1, said(/stopped/).join('\n'));
  });

  it('tells a daemon why it stops when the stop comes as its round ends, with a last call', async (t) => {
    const namespace = await testNamespace(t);
    const reasons: string[] = [];
    const roundEnded = Promise.withResolvers<void>();
    const op = operator({ name: 'daemons', secret: TEST_SECRET });
    op.on.daemon('kopfexamples', async function gap_fn({ stopped }) {
      const signal = stopped;
      await abortedOf(signal);
      reasons.push(String(signal.reason));
      if (signal.reason === 'round-ended') {
        roundEnded.resolve();
        // Still returning (saving its progress, say) when the deletion comes: it cannot hear of it now.
        await sleep(500);
      }
    });
    const running = await runOperator(op, {
      namespaces: [namespace],
      settings: { calls: { daemonRoundMs: 2000 } },
    });
    t.after(() => running.stop());
    const path = await createKopfExample(namespace, 'gap');
    await roundEnded.promise;
    await client.request(path, { method: 'DELETE' });
    await gone(path);
    assert.deepEqual(reasons, ['round-ended', 'resource-deleted']);
  });
});
