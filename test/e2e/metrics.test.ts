/**
 * The gateway's Prometheus metrics, scraped as Prometheus scrapes them, after what an operator does
 * on the real apiserver: objects handled, a handler retried, admission reviews the apiserver sent,
 * and a function service gone down until its circuit opens.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { operator, TemporaryError } from '../../functions/index.ts';
import { serveFetch } from '../../gateway/cli/commands/serve/serve.ts';
import { startGateway } from '../../gateway/gateway.ts';
import { testNamespace } from '../support/cluster.ts';
import { sample, samples } from '../support/metrics.ts';
import {
  applyFile,
  createKopfExample,
  eventually,
  KOPFEXAMPLES_SCOPE,
  kubeClient,
  kubeConfig,
  memoryLogger,
  statusOnceThere,
  TEST_SECRET,
} from '../support/operator.ts';

const CRD = new URL('../../examples/01-minimal/crd.yaml', import.meta.url);
const CONTROLLER = 'kopfexamples.kopf.dev/v1';

describe('the metrics endpoint', () => {
  it('counts cycles, handler calls, retries, API writes, reviews and an open circuit, as they happen', async (t) => {
    await applyFile(CRD);
    const namespace = await testNamespace(t);
    const client = await kubeClient();

    const metered = operator({ name: 'metered', secret: TEST_SECRET });
    metered.on.create('kopfexamples', function create_fn({ name }) {
      return { created: name };
    });
    metered.on.create('kopfexamples', { labels: { flaky: 'yes' } }, function flaky_fn({ retry }) {
      if (retry === 0) throw new TemporaryError('not yet', { delay: 0.1 });
      return 'done';
    });
    // Kept for every object, and never due during the test.
    metered.on.timer('kopfexamples', { interval: 3600, initialDelay: 3600 }, function hourly() {});
    // Reviews by a service of their own, which stays up while the other goes down.
    const reviewer = operator({ name: 'reviewer', secret: TEST_SECRET });
    reviewer.on.validate('kopfexamples', function check_fn() {});
    const servers = await Promise.all(
      [metered, reviewer].map((op) => serveFetch(op, { port: 0, host: '127.0.0.1' })),
    );
    const [meteredServer, reviewerServer] = servers as [(typeof servers)[0], (typeof servers)[0]];
    const gateway = await startGateway({
      functions: [
        { name: 'metered', url: meteredServer.url, scope: KOPFEXAMPLES_SCOPE },
        { name: 'reviewer', url: reviewerServer.url, scope: KOPFEXAMPLES_SCOPE },
      ],
      secret: new TextEncoder().encode(TEST_SECRET),
      kubeconfig: await kubeConfig(),
      namespaces: [namespace],
      // Webhook configurations are cluster-wide: its own.
      identity: { annotationPrefix: `${namespace}.causeway.dev` },
      metrics: '127.0.0.1:0',
      logger: memoryLogger(),
      settings: {
        calls: { breakerThreshold: 2, serviceRetryDelaysS: [0.2, 0.5] },
        admission: { reach: 'local' },
      },
    });
    t.after(() => Promise.all([gateway.stop(), ...servers.map((server) => server.close())]));
    await gateway.synced;
    const url = gateway.metrics as string;
    assert.match(url, /^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    const scrape = async () => {
      const response = await fetch(url);
      assert.equal(response.status, 200);
      assert.match(response.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
      return samples(await response.text());
    };
    const webhook = '/reviewer/check_fn';
    const reviews = async () =>
      sample(await scrape(), 'controller_runtime_webhook_requests_total', { webhook, code: '200' });

    // The apiserver takes the webhook configuration up shortly after it is written: a dry run reviewed.
    await eventually('the validating webhook in effect', async () => {
      await client.request(`/apis/kopf.dev/v1/namespaces/${namespace}/kopfexamples`, {
        method: 'POST',
        query: { dryRun: 'All' },
        body: { apiVersion: 'kopf.dev/v1', kind: 'KopfExample', metadata: { name: 'probe' }, spec: {} },
      });
      return (await reviews()) > 0 ? true : undefined;
    });
    const reviewedBefore = await reviews();

    assert.deepEqual(await statusOnceThere(await createKopfExample(namespace, 'plain'), 'create_fn'), {
      created: 'plain',
    });
    const flaky = await createKopfExample(namespace, 'flaky', {}, { labels: { flaky: 'yes' } });
    assert.equal(await statusOnceThere(flaky, 'flaky_fn'), 'done');

    // A cycle ends just after its write, which the test may see first: its end counted, nothing waits.
    await eventually('no change waiting', async () =>
      sample(await scrape(), 'causeway_oldest_unhandled_seconds', { resource: CONTROLLER }) === 0
        ? true
        : undefined,
    );
    const handled = await scrape();
    const calls = (handler: string, outcome: string) =>
      sample(handled, 'causeway_handler_calls_total', {
        service: 'metered',
        handler,
        cause: 'create',
        outcome,
      });
    assert.equal(sample(handled, 'causeway_objects', { resource: CONTROLLER }), 2, 'plain and flaky');
    assert.equal(
      sample(handled, 'causeway_owned_objects', { resource: CONTROLLER }),
      2,
      'alone, it handles all',
    );
    assert.equal(calls('create_fn', 'success'), 2);
    assert.equal(calls('flaky_fn', 'temporary'), 1);
    assert.equal(calls('flaky_fn', 'success'), 1);
    assert.equal(
      sample(handled, 'causeway_handler_duration_seconds_count', { service: 'metered', handler: 'flaky_fn' }),
      2,
    );
    const reviewed = { service: 'reviewer', handler: 'check_fn', cause: 'admission', outcome: 'success' };
    assert.equal(
      sample(handled, 'causeway_handler_calls_total', reviewed),
      sample(handled, 'controller_runtime_webhook_requests_total', { webhook, code: '200' }),
      'each review one call of its handler',
    );
    assert.ok(
      sample(handled, 'controller_runtime_reconcile_total', {
        controller: CONTROLLER,
        result: 'requeue_after',
      }) >= 1,
      'the retry of flaky_fn',
    );
    assert.ok(
      sample(handled, 'controller_runtime_reconcile_total', { controller: CONTROLLER, result: 'success' }) >=
        2,
    );
    assert.ok(sample(handled, 'workqueue_retries_total', { name: CONTROLLER }) >= 1);
    assert.ok(sample(handled, 'workqueue_adds_total', { name: CONTROLLER }) >= 3);
    assert.equal(
      sample(handled, 'workqueue_depth', { name: CONTROLLER }),
      0,
      'nothing waits once all is handled',
    );
    // One status write per handled object (its record and results), one more for the retry.
    assert.ok(sample(handled, 'causeway_api_writes_total', { verb: 'PATCH', subresource: 'status' }) >= 3);
    assert.ok(sample(handled, 'rest_client_requests_total', { code: '200', method: 'GET' }) >= 1);
    assert.ok(sample(handled, 'causeway_function_requests_total', { service: 'metered', code: '200' }) >= 3);
    // The two creations reviewed, besides the dry runs before.
    assert.equal(await reviews(), reviewedBefore + 2);
    assert.equal(
      sample(handled, 'controller_runtime_webhook_latency_seconds_count', { webhook }),
      sample(handled, 'controller_runtime_webhook_requests_total', { webhook, code: '200' }),
    );
    assert.equal(sample(handled, 'causeway_function_breaker_open', { service: 'metered' }), 0);
    assert.equal(sample(handled, 'causeway_timers', { resource: CONTROLLER }), 2, "plain's and flaky's");
    assert.equal(sample(handled, 'causeway_daemons', { resource: CONTROLLER }), 0);

    await meteredServer.close();
    await createKopfExample(namespace, 'down-0');
    await createKopfExample(namespace, 'down-1');
    const down = await eventually('the circuit of "metered" open', async () => {
      const now = await scrape();
      return sample(now, 'causeway_function_breaker_open', { service: 'metered' }) === 1 ? now : undefined;
    });
    assert.equal(sample(down, 'causeway_function_breaker_open', { service: 'reviewer' }), 0);
    assert.ok(
      sample(down, 'causeway_oldest_unhandled_seconds', { resource: CONTROLLER }) > 0,
      'down-0 and down-1 wait for their service',
    );
    assert.ok(sample(down, 'causeway_function_requests_total', { service: 'metered', code: '<error>' }) >= 2);
    const failed = { service: 'metered', handler: 'create_fn', cause: 'create', outcome: 'failed' };
    assert.equal(sample(handled, 'causeway_handler_calls_total', failed), 0);
    assert.ok(sample(down, 'causeway_handler_calls_total', failed) >= 2, 'the calls that found it down');
  });
});
