/**
 * Admission with replicas through the real apiserver (issue 22): two gateways of one identity serve
 * the webhooks, which the apiserver calls at one URL, a TCP balancer in the role of their Service.
 * A rolling restart (a new replica ready, then the old one taken out of the balancer and stopped, one
 * replica after the other) under a stream of server-side dry runs: every review gets the handler's
 * verdict, none is refused for a webhook the apiserver could not call, the webhook configurations stay
 * throughout, and they go only when the last replica stops.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { apiRequest } from '../../deploy/control-plane/https.ts';
import { AdmissionError, operator } from '../../functions/index.ts';
import type { KubeClient } from '../../gateway/kube/client.ts';
import { ignoreNotFound } from '../../gateway/kube/errors.ts';
import { startBalancer } from '../support/balancer.ts';
import { testCluster, testNamespace } from '../support/cluster.ts';
import {
  applyFile,
  eventually,
  kubeClient,
  memoryLogger,
  type RunningOperator,
  runOperator,
  TEST_SECRET,
} from '../support/operator.ts';

const CRD = new URL('../../examples/01-minimal/crd.yaml', import.meta.url);
const CONFIGURATIONS = ['validatingwebhookconfigurations', 'mutatingwebhookconfigurations'];
const DENIED = /denied the request: spec\.field must not be "denied"/;

/** Refuses spec.field "denied"; labels every object it reviews with the replica's name. */
function replicaOperator(replica: string) {
  const op = operator({ name: 'replicas', secret: TEST_SECRET });
  op.on.validate('kopfexamples', { operations: ['CREATE'] }, function check_field({ spec }) {
    if (spec.field === 'denied') throw new AdmissionError('spec.field must not be "denied"', 422);
  });
  op.on.mutate('kopfexamples', { operations: ['CREATE'] }, function stamp({ patch }) {
    patch.metadata = { labels: { 'reviewed-by': replica } };
  });
  return op;
}

interface Replica extends RunningOperator {
  name: string;
  /** Its webhook server's port, behind the balancer. */
  port: number;
}

/** What a user sees of a server-side dry run: the verdict, and who reviewed it when admitted. */
type Answer = { verdict: 'allowed'; reviewedBy: string } | { verdict: 'denied' } | { verdict: string };

describe('admission with replicas through the real apiserver', () => {
  let client: KubeClient;

  before(async () => {
    await applyFile(CRD);
    client = await kubeClient();
  });

  it('answers every review of a stream through a rolling restart of 2 replicas, and the configurations go with the last', async (t) => {
    const namespace = await testNamespace(t);
    const prefix = `${namespace}.causeway.dev`; // webhook configurations are cluster-wide: its own
    const balancer = await startBalancer();
    t.after(() => balancer.close());
    const running = new Set<Replica>();
    t.after(() => Promise.all([...running].map((replica) => replica.stop())));

    /** A replica, added to the balancer once ready (the kubelet's readiness probe, the endpoints controller). */
    const logs = new Map<string, string[]>();
    const start = async (name: string): Promise<Replica> => {
      const logger = memoryLogger();
      logs.set(name, logger.lines);
      const run = await runOperator(replicaOperator(name), {
        namespaces: [namespace],
        identity: { annotationPrefix: prefix },
        peering: { namespace, id: name },
        liveness: 'http://127.0.0.1:0/healthz',
        logger,
        settings: {
          admission: {
            reach: 'local',
            url: balancer.url,
            certificates: { namespace, name: 'webhook-certificates' },
          },
        },
      });
      const served = logger.lines.join('').match(/admission webhooks served at https:\/\/127\.0\.0\.1:(\d+)/);
      assert.ok(served, `${name} serves webhooks`);
      const replica = { ...run, name, port: Number(served[1]) };
      running.add(replica);
      await eventually(`${name} ready`, async () =>
        (await fetch(run.gateway.readiness as string)).status === 200 ? true : undefined,
      );
      balancer.add(replica.port);
      return replica;
    };
    const stopTimes: string[] = [];
    /** Out of the balancer first (its endpoint removed as its pod terminates), then stopped. */
    const stop = async (replica: Replica): Promise<void> => {
      const began = Date.now();
      balancer.remove(replica.port);
      running.delete(replica);
      await replica.stop();
      stopTimes.push(`${replica.name} ${Date.now() - began} ms`);
    };

    const api = await testCluster();
    const dryRun = async (field: string): Promise<Answer> => {
      const response = await apiRequest(
        api,
        'POST',
        `/apis/kopf.dev/v1/namespaces/${namespace}/kopfexamples?dryRun=All`,
        { apiVersion: 'kopf.dev/v1', kind: 'KopfExample', metadata: { name: 'probe' }, spec: { field } },
      );
      const body = JSON.parse(response.body);
      if (response.status === 201) {
        const reviewedBy = body.metadata.labels?.['reviewed-by'];
        return reviewedBy ? { verdict: 'allowed', reviewedBy } : { verdict: 'allowed unmutated' };
      }
      return DENIED.test(body.message)
        ? { verdict: 'denied' }
        : { verdict: `${response.status} ${body.message}` };
    };

    const a = await start('a');
    await eventually('the webhooks in effect', async () =>
      (await dryRun('fine')).verdict === 'allowed' && (await dryRun('denied')).verdict === 'denied'
        ? true
        : undefined,
    );
    const configurations = recordConfigurations(client, prefix);
    t.after(() => configurations.stop());
    await eventually('the configurations watched', async () =>
      Object.values(configurations.events).every((events) => events.length > 0) ? true : undefined,
    );
    const b = await start('b');

    // Two streams, one of a value the handler allows and one it denies, each a review after the other.
    const answers: Array<{ field: string; answer: Answer }> = [];
    let streaming = true;
    const stream = (field: string) =>
      (async () => {
        while (streaming)
          answers.push({ field, answer: await dryRun(field).catch((error) => ({ verdict: String(error) })) });
      })();
    const streams = [stream('fine'), stream('denied')];
    t.after(() => {
      streaming = false; // should the test fail before it ends them
    });
    const started = Date.now();
    /** Until 10 reviews from now on are admitted by `replicas`: the stream goes on through them for a while. */
    const flowsThrough = async (...replicas: Replica[]) => {
      const names = replicas.map(({ name }) => name);
      const from = answers.length;
      await eventually(`10 reviews admitted by ${names.join(' or ')}`, async () =>
        answers
          .slice(from)
          .filter(({ answer }) => 'reviewedBy' in answer && names.includes(answer.reviewedBy)).length >= 10
          ? true
          : undefined,
      );
    };

    await flowsThrough(a, b);
    const a2 = await start('a2');
    await stop(a);
    await flowsThrough(b, a2);
    const b2 = await start('b2');
    await stop(b);
    await flowsThrough(a2, b2);
    const restarted = Date.now();
    await stop(a2);
    assert.deepEqual(await configured(client, prefix), CONFIGURATIONS, 'b2 runs: the configurations stay');
    await flowsThrough(b2);
    streaming = false;
    await Promise.all(streams);

    const rate = answers.length / ((Date.now() - started) / 1000);
    t.diagnostic(
      `${answers.length} reviews (${rate.toFixed(1)}/s); the restart took ${restarted - started} ms; stops: ${stopTimes.join(', ')}`,
    );
    assert.ok(rate > 4, `several reviews a second: ${rate.toFixed(1)}`);
    const failed = answers.filter(({ answer }) => /failed calling webhook/.test(answer.verdict));
    assert.deepEqual(failed, [], 'no review refused for a webhook the apiserver could not call');
    const wrong = answers.filter(
      ({ field, answer }) => answer.verdict !== (field === 'denied' ? 'denied' : 'allowed'),
    );
    assert.deepEqual(wrong, [], "every review got the handler's verdict");

    await stop(b2);
    assert.deepEqual(
      await configured(client, prefix),
      [],
      // What each replica said of its Lease and of the others, should one have kept them.
      `the last replica removed them\n${[...logs].map(([name, lines]) => `${name}:\n${lines.join('')}`).join('\n')}`,
    );
    await eventually('both deletions watched', async () =>
      Object.values(configurations.events).every((events) => events.includes('DELETED')) ? true : undefined,
    );
    await configurations.stop();
    assert.deepEqual(
      configurations.events,
      Object.fromEntries(CONFIGURATIONS.map((kind) => [kind, ['ADDED', 'DELETED']])),
      'there from the first start to the last stop, unchanged',
    );
  });
});

/** The kinds of webhook configuration named `name` that exist now. */
async function configured(client: KubeClient, name: string): Promise<string[]> {
  const found = await Promise.all(
    CONFIGURATIONS.map((kind) =>
      ignoreNotFound(client.get(`/apis/admissionregistration.k8s.io/v1/${kind}/${name}`)),
    ),
  );
  return CONFIGURATIONS.filter((_, index) => found[index] !== undefined);
}

/** Watches the webhook configurations named `name`: the type of every event, by kind, until stopped. */
function recordConfigurations(client: KubeClient, name: string) {
  const events = Object.fromEntries(CONFIGURATIONS.map((kind) => [kind, [] as string[]]));
  const stopping = new AbortController();
  const watches = CONFIGURATIONS.map(async (kind) => {
    const body = await client.stream(`/apis/admissionregistration.k8s.io/v1/${kind}`, {
      query: { watch: 'true', fieldSelector: `metadata.name=${name}` },
      signal: stopping.signal,
    });
    let pending = '';
    try {
      for await (const chunk of body) {
        pending += chunk.toString();
        for (let newline = pending.indexOf('\n'); newline >= 0; newline = pending.indexOf('\n')) {
          events[kind]?.push(JSON.parse(pending.slice(0, newline)).type);
          pending = pending.slice(newline + 1);
        }
      }
    } catch (error) {
      if (!stopping.signal.aborted) throw error;
    }
  });
  return {
    events,
    async stop() {
      stopping.abort();
      await Promise.all(watches);
    },
  };
}
