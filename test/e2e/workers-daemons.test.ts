/**
 * A daemon on Cloudflare Workers, end to end: the operator module bundled for workerd and served by
 * Miniflare over HTTP, a gateway calling it on the real control plane, in short rounds. Each round is
 * one call that workerd holds open until the round's end, answers, and is called again at once with
 * its memo. Deleting the object stops it, and the deletion completes once its last call has returned.
 * workerd killed with a call open and started again on the same address: the daemon is called again,
 * from the memo of its last round that answered, with no help.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { startGateway } from '../../gateway/gateway.ts';
import { isNotFound } from '../../gateway/kube/errors.ts';
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
  TEST_SECRET,
} from '../support/operator.ts';
import { freePort } from '../support/processes.ts';
import { startWorker } from '../support/workerd.ts';

const CRD = new URL('../../examples/01-minimal/crd.yaml', import.meta.url);
const MODULE = fileURLToPath(new URL('../support/daemon-operator.ts', import.meta.url));
/** Short rounds: three of them take seconds. */
const ROUND_MS = 3000;

/** Resolves once the object at `path` is gone. */
async function gone(path: string): Promise<void> {
  const client = await kubeClient();
  await eventually(
    `${path} gone`,
    async () => {
      try {
        await client.get(path);
        return undefined;
      } catch (error) {
        if (isNotFound(error)) return true;
        throw error;
      }
    },
    4 * ROUND_MS,
  );
}

describe('a daemon on workerd', () => {
  it('runs in rounds that end and are called again with the memo, and stops when its object is deleted', async (t) => {
    await applyFile(CRD);
    const namespace = await testNamespace(t);
    const client = await kubeClient();
    const worker = await startWorker(MODULE, { bindings: { CAUSEWAY_SECRET: TEST_SECRET } });
    t.after(() => worker.close());
    const logger = memoryLogger();
    const gateway = await startGateway({
      functions: [{ name: 'daemons', url: worker.url, scope: KOPFEXAMPLES_SCOPE }],
      secret: new TextEncoder().encode(TEST_SECRET),
      kubeconfig: await kubeConfig(),
      namespaces: [namespace],
      logger,
      settings: { calls: { daemonRoundMs: ROUND_MS } },
    });
    t.after(() => gateway.stop());
    const said = (pattern: RegExp) =>
      logger.lines.filter((line) => line.includes(`[${namespace}/beating]`) && pattern.test(line));

    const started = Date.now();
    const path = await createKopfExample(namespace, 'beating');
    const beats = async () =>
      (await client.get<KubernetesObject>(path)).status?.beats as
        | { rounds: number; runtime: string }
        | undefined;
    const third = await eventually(
      'the third round ended and written',
      async () => {
        const now = await beats();
        return now && now.rounds >= 3 ? now : undefined;
      },
      8 * ROUND_MS,
    );
    const elapsed = Date.now() - started;
    assert.equal(third.runtime, 'Cloudflare-Workers', 'the daemon ran on workerd');
    assert.ok(elapsed >= 2 * ROUND_MS, `three rounds took ${elapsed} ms: each lasts about a round`);
    // Each round began where the last one left the memo, and ended because the round was over.
    for (const round of [1, 2, 3]) {
      assert.equal(
        said(new RegExp(`round ${round} started on Cloudflare-Workers`)).length,
        1,
        `round ${round}`,
      );
      assert.equal(said(new RegExp(`round ${round} stopped: round-ended`)).length, 1, `round ${round}`);
    }
    assert.deepEqual(
      said(/daemon (failed|returned|given up).* handler=beat_fn /),
      [],
      'no round failed or returned for good',
    );
    assert.ok(
      (await client.get<KubernetesObject>(path)).metadata.finalizers?.length,
      'the daemon holds its object with a finalizer',
    );

    await client.request(path, { method: 'DELETE' });
    await gone(path);
    assert.equal(
      said(/daemon stopped .*handler=beat_fn why=resource-deleted/).length,
      1,
      'the gateway stopped the daemon for the deletion',
    );
    // Told by a stop call, which on Workers is another request than the daemon's own.
    assert.equal(said(/stopped: resource-deleted/).length, 1, said(/round \d+ stopped/).join('\n'));
  });

  it('is called again, and runs, once workerd is back after being killed with its call open', async (t) => {
    await applyFile(CRD);
    const namespace = await testNamespace(t);
    const client = await kubeClient();
    const port = await freePort();
    const start = () => startWorker(MODULE, { bindings: { CAUSEWAY_SECRET: TEST_SECRET }, port });
    let worker = await start();
    t.after(() => worker.close());
    // Each round calls it as it begins: a positive sign that the daemon's call is open in the Worker.
    const beacon = await startBeacon();
    t.after(() => beacon.close());
    const rounds = () => beacon.hits.map((hit) => new URLSearchParams(hit).get('round'));
    const begun = (round: number, times: number) =>
      eventually(`round ${round} begun ${times} time(s)`, async () =>
        rounds().filter((each) => each === String(round)).length >= times ? true : undefined,
      );
    const logger = memoryLogger();
    const gateway = await startGateway({
      functions: [{ name: 'daemons', url: worker.url, scope: KOPFEXAMPLES_SCOPE }],
      secret: new TextEncoder().encode(TEST_SECRET),
      kubeconfig: await kubeConfig(),
      namespaces: [namespace],
      logger,
      settings: { calls: { daemonRoundMs: ROUND_MS, serviceRetryDelaysS: [0.2, 0.5, 1] } },
    });
    t.after(() => gateway.stop());
    const said = (pattern: RegExp) =>
      logger.lines.filter((line) => line.includes(`[${namespace}/restarted]`) && pattern.test(line));

    const path = await createKopfExample(namespace, 'restarted', { beacon: beacon.url });
    const beats = async () =>
      ((await client.get<KubernetesObject>(path)).status?.beats as { rounds?: number } | undefined)?.rounds ??
      0;
    // Round 1 answered (its memo kept by the gateway), round 2's call open in the Worker: kill workerd.
    await begun(2, 1);
    assert.equal(await beats(), 1, 'round 1 written when its call ended');
    await worker.close();

    const lost = await eventually(
      'the lost call in the log',
      async () => said(/daemon failed temporarily .*handler=beat_fn/)[0],
    );
    assert.match(
      lost,
      new RegExp(
        `daemon failed temporarily .*handler=beat_fn retry=\\d+ delaySeconds=[\\d.]+ err="POST ${worker.url}${PATHS.invoke}: (other side closed|read ECONNRESET)"`,
      ),
    );

    worker = await start();
    // Called again with no help, in the new workerd, from the memo of the last round that answered
    // (the killed round's memo went with its call), and runs on: its rounds end and are written.
    await begun(2, 2);
    await eventually('round 2 written', async () => ((await beats()) >= 2 ? true : undefined));
    await begun(3, 1);
    assert.deepEqual(rounds(), ['1', '2', '2', '3'], 'called once per round, and again for the lost one');
    assert.equal(said(/round 2 stopped: round-ended/).length, 1, 'the killed round never answered');

    await client.request(path, { method: 'DELETE' });
    await gone(path);
    assert.equal(said(/daemon stopped .*handler=beat_fn why=resource-deleted/).length, 1);
  });
});
