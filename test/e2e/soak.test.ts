/**
 * The soak of bench/soak.ts for one minute instead of an hour, after a warm-up, at a rate that holds
 * while the suite runs other test files beside it: `causeway gateway` and `causeway serve` as users
 * start them, objects created, updated and deleted, each with a timer and a daemon, the apiserver
 * calling the validating and mutating webhooks on those writes. Its verdicts are the bench's: the
 * gateway's RSS and descriptors flat over the minute, its own event-loop delay p99 at most 50 ms (the
 * delay without its waits for a CPU, which the test files beside it cause), every object handled
 * within 10 s at each step, and at rest once every object is gone.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { it } from 'node:test';
import { type Command, ROOT, startTogether } from '../../bench/common.ts';
import { report, soak, soakTarget } from '../../bench/soak.ts';
import { freePorts } from '../../deploy/control-plane/ports.ts';
import { testCluster, testNamespace } from '../support/cluster.ts';
import { applyFile, kubeClient } from '../support/operator.ts';
import { CAUSEWAY_CLI } from '../support/processes.ts';

const CRD = new URL('../../examples/01-minimal/crd.yaml', import.meta.url);
const RATE = 2;
const WARMUP_SECONDS = 30;

const causeway = (args: string[]): Command => ({
  file: process.execPath,
  args: [CAUSEWAY_CLI, ...args, '--quiet'],
});

it('holds memory, descriptors and its own event-loop delay flat under churn, handling every object', async (t) => {
  await applyFile(CRD);
  const client = await kubeClient();
  const namespace = await testNamespace(t);
  const [functionsPort, metricsPort] = (await freePorts(2)) as [number, number];
  const running = await startTogether(
    [
      causeway([
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
      causeway([
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
  const result = await soak(soakTarget(running, { client, namespace, metricsPort }), {
    seconds: WARMUP_SECONDS + 60,
    rate: RATE,
    lifetimeSeconds: 6,
    warmupSeconds: WARMUP_SECONDS,
    sampleSeconds: 2,
    boundSeconds: 10,
  });
  report(result);
  assert.equal(result.objects.created, (WARMUP_SECONDS + 60) * RATE);
  for (const [name, verdict] of Object.entries(result.verdicts))
    assert.ok(verdict.pass, `${name}: ${verdict.detail}`);
  // The webhooks were called on the writes: a create is reviewed at least twice (validated and mutated).
  assert.ok(result.reviewsPerSecond >= 2 * RATE, `${result.reviewsPerSecond} reviews/s`);
});
