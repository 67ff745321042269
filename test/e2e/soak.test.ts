/**
 * The soak of bench/soak.ts at one minute instead of an hour: `causeway gateway` and `causeway serve` as
 * users start them, 20 objects a second created, updated and deleted, each with a timer and a daemon,
 * the apiserver calling the validating and mutating webhooks on those writes. Its verdicts, over the
 * 30 s after a 30 s warm-up (the gateway from sources takes some 28 s to reach its RSS plateau at
 * this rate): the gateway's RSS and its descriptors flat, its event loop's p99 lag under
 * 50 ms, every object handled within 10 s at each step.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { it } from 'node:test';
import { type Command, startTogether } from '../../bench/common.ts';
import { report, soak } from '../../bench/soak.ts';
import { testCluster, testNamespace } from '../support/cluster.ts';
import { applyFile, kubeClient } from '../support/operator.ts';
import { freePort } from '../support/processes.ts';

const ROOT = new URL('../..', import.meta.url).pathname;
const CRD = new URL('../../examples/01-minimal/crd.yaml', import.meta.url);

/** The CLI from sources, as test/support/processes.ts runs it. */
const cli = (args: string[]): Command => ({
  file: process.execPath,
  args: [join(ROOT, 'gateway/cli/main.ts'), ...args, '--quiet'],
});

it('holds memory, descriptors and event-loop lag flat under 20 objects/s of churn, handling every object', async (t) => {
  await applyFile(CRD);
  const client = await kubeClient();
  const namespace = await testNamespace(t);
  const [functionsPort, metricsPort] = [await freePort(), await freePort()];
  const running = await startTogether(
    [
      cli([
        'gateway',
        '--standalone',
        '--functions',
        `bench=http://127.0.0.1:${functionsPort}`,
        '--function-scope',
        `bench=${join(ROOT, 'bench/operators/scope.yaml')}`,
        '--namespace',
        namespace,
        // The webhook configurations are cluster-wide: named after this namespace, apart from other tests'.
        '--annotation-prefix',
        `${namespace}.causeway.dev`,
        '--metrics',
        `127.0.0.1:${metricsPort}`,
      ]),
      cli([
        'serve',
        join(ROOT, 'bench/operators/causeway-soak.ts'),
        '--host',
        '127.0.0.1',
        '--port',
        String(functionsPort),
      ]),
    ],
    { client, kubeconfig: (await testCluster()).kubeconfigPath, namespace },
    { BENCH_TIMER_INTERVAL: '3' },
  );
  t.after(() => running.stop());
  const [gatewayPid, functionsPid] = running.pids as [number, number];
  const result = await soak(
    {
      client,
      namespace,
      gatewayPid,
      functionsPid,
      metricsUrl: `http://127.0.0.1:${metricsPort}/metrics`,
      gone: () => running.gone,
    },
    { seconds: 60, rate: 20, lifetimeSeconds: 6, warmupSeconds: 30, sampleSeconds: 2, boundSeconds: 10 },
  );
  report(result);
  assert.equal(result.objects.created, 1200);
  for (const [name, verdict] of Object.entries(result.verdicts))
    assert.ok(verdict.pass, `${name}: ${verdict.detail}`);
  // The webhooks were called on the writes: a create is reviewed at least twice (validated and mutated).
  assert.ok(result.reviewsPerSecond >= 40, `${result.reviewsPerSecond} reviews/s`);
});
