/**
 * A bad function service refuses that service only (issue 39): one gateway (`causeway gateway`, as
 * users run it, or started in the test's process) given two `--functions` services, one of them refused (its manifest beyond its pin, or webhooks the apiserver refuses),
 * starts, serves the other (its objects handled, its webhook answering), names the refused one in its
 * log, its metrics and its readiness body, and takes it up once it is redeployed fixed, without a
 * restart of the gateway.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { before, describe, it, type TestContext } from 'node:test';
import { AdmissionError, type Operator, operator } from '../../../functions/index.ts';
import { type RunningServer, serveFetch } from '../../../gateway/cli/commands/serve/serve.ts';
import { type Gateway, startGateway } from '../../../gateway/gateway.ts';
import type { KubeClient } from '../../../gateway/kube/client.ts';
import type { KubernetesObject, ServiceScope } from '../../../protocol/index.ts';
import { testNamespace } from '../../support/cluster.ts';
import { sample, samples, scrape } from '../../support/metrics.ts';
import {
  admissionRefusal,
  applyFile,
  createKopfExample,
  eventually,
  kubeClient,
  kubeConfig,
  memoryLogger,
  statusOnceThere,
  TEST_SECRET,
} from '../../support/operator.ts';
import { causeway } from '../../support/processes.ts';

const CRD = new URL('../../../examples/01-minimal/crd.yaml', import.meta.url);
const KOPFEXAMPLES = 'kopfexamples.kopf.dev';
const GOOD_PIN: ServiceScope = { resources: [KOPFEXAMPLES], admission: [KOPFEXAMPLES] };

/** The well-behaved service: handles every KopfExample, and refuses spec.field "forbidden" at admission. */
function goodService(): Operator {
  const op = operator({ name: 'good', secret: TEST_SECRET });
  op.on.create('kopfexamples', function create_fn() {
    return 'handled by good';
  });
  op.on.validate('kopfexamples', function check_field({ spec }) {
    if (spec.field === 'forbidden') throw new AdmissionError('good says spec.field must not be "forbidden"');
  });
  return op;
}

/** A service's server, which can be restarted at the same URL with another build of it. */
async function restartable(t: TestContext, op: Operator) {
  let server: RunningServer = await serveFetch(op, { port: 0, host: '127.0.0.1' });
  const { port } = new URL(server.url);
  t.after(() => server.close());
  return {
    url: server.url,
    async restart(next: Operator) {
      await server.close();
      server = await serveFetch(next, { port: Number(port), host: '127.0.0.1' });
    },
  };
}

async function readiness(gateway: Gateway): Promise<{ status: number; body: Record<string, unknown> }> {
  assert.ok(gateway.readiness);
  const response = await fetch(gateway.readiness);
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

describe('a function service refused, beside one served', () => {
  let client: KubeClient;
  before(async () => {
    client = await kubeClient();
    await applyFile(CRD);
  });

  /** One gateway serving `good` and `other`, both over HTTP, with a liveness endpoint and metrics. */
  async function gatewayOf(
    t: TestContext,
    namespace: string,
    other: { name: string; url: string; scope: ServiceScope },
    annotationPrefix: string,
  ) {
    const good = await restartable(t, goodService());
    const logger = memoryLogger();
    const gateway = await startGateway({
      functions: [{ name: 'good', url: good.url, scope: GOOD_PIN }, other],
      secret: new TextEncoder().encode(TEST_SECRET),
      kubeconfig: await kubeConfig(),
      namespaces: [namespace],
      logger,
      // The webhook configurations are cluster-wide: named for this test alone.
      identity: { annotationPrefix },
      liveness: 'http://127.0.0.1:0/healthz',
      metrics: '127.0.0.1:0',
      // A refused service's manifest read again soon, and the manifests refreshed every second.
      settings: { calls: { manifestRereadSpacingMs: 200, manifestRefreshMs: 1000 } },
    });
    t.after(() => gateway.stop());
    await gateway.synced;
    return { gateway, logger };
  }

  /** The apiserver refuses what good's webhook denies, once the configuration is in effect. */
  async function goodWebhookAnswers(namespace: string): Promise<void> {
    const message = await admissionRefusal(namespace, { field: 'forbidden' });
    assert.match(message, /good says spec\.field must not be "forbidden"/);
  }

  /** What the gateway says of `service` in its metrics and readiness body: refused, and why. */
  async function reported(gateway: Gateway, service: string) {
    const metric = sample(await scrape(gateway), 'causeway_function_service_refused', { service });
    const { status, body } = await readiness(gateway);
    const refused = body.functionServicesRefused as Record<string, string> | undefined;
    return { metric, status, ready: body.ready, why: refused?.[service] };
  }

  it('starts without a service whose manifest names a resource beyond its pin, serves the other, and takes it up once fixed', async (t) => {
    // As a user runs it: `causeway gateway` with two --functions services, each pinned from a file.
    const namespace = await testNamespace(t);
    const greedy = () => {
      const op = operator({ name: 'greedy', secret: TEST_SECRET });
      op.on.create('kopfexamples', function greedy_fn() {
        return 'handled by greedy';
      });
      return op;
    };
    const beyond = greedy();
    beyond.on.event('secrets', function steal() {});
    const bad = await restartable(t, beyond);
    const good = await restartable(t, goodService());
    const dir = mkdtempSync(join(tmpdir(), 'causeway-refused-'));
    t.after(() => rm(dir, { recursive: true, force: true }));
    const file = (name: string, text: string) => {
      writeFileSync(join(dir, name), text);
      return join(dir, name);
    };
    const { CAUSEWAY_SECRET: _unset, ...env } = process.env;
    const gateway = causeway(
      [
        'gateway',
        '--standalone',
        '--functions',
        `good=${good.url}`,
        '--functions',
        `greedy=${bad.url}`,
        '--function-scope',
        `good=${file('good.yaml', `resources: [${KOPFEXAMPLES}]\nadmission: [${KOPFEXAMPLES}]\n`)}`,
        '--function-scope',
        `greedy=${file('greedy.yaml', `resources: [${KOPFEXAMPLES}]\n`)}`,
        '--secret-file',
        file('secret', TEST_SECRET),
        '--namespace',
        namespace,
        // The webhook configurations are cluster-wide: named for this test alone.
        '--annotation-prefix',
        `${namespace}.causeway.dev`,
        '--metrics',
        '127.0.0.1:0',
        '--liveness',
        'http://127.0.0.1:0/healthz',
      ],
      env,
    );
    t.after(() => gateway.stop());
    const readyz = (await gateway.waitFor(/readiness at (http:\/\/\S+)/))[1] as string;
    const metrics = (await gateway.waitFor(/metrics at (http:\/\/\S+)/))[1] as string;
    const reported = async () => {
      const scraped = samples(await (await fetch(metrics)).text());
      const response = await fetch(readyz);
      const body = (await response.json()) as Record<string, unknown>;
      const refused = body.functionServicesRefused as Record<string, string> | undefined;
      return {
        metric: sample(scraped, 'causeway_function_service_refused', { service: 'greedy' }),
        status: response.status,
        ready: body.ready,
        why: refused?.greedy,
      };
    };

    // Started, and says which service it refuses and why: in its log, its metrics, its readiness body.
    const why =
      /handler "steal" of "greedy" names secrets, outside the scope pinned for it \(resources: kopfexamples\.kopf\.dev\): the service is not served/;
    await gateway.waitFor(new RegExp(`function service "greedy" is refused: ${why.source}`));
    const refused = await eventually('the gateway ready', async () => {
      const now = await reported();
      return now.ready ? now : undefined;
    });
    assert.equal(refused.metric, 1);
    assert.equal(refused.status, 200, 'ready for the others');
    assert.match(refused.why ?? '', why);

    // The other is served: its objects handled, its webhook answering.
    const before = await createKopfExample(namespace, 'before-the-fix');
    assert.equal(await statusOnceThere(before, 'create_fn'), 'handled by good');
    await goodWebhookAnswers(namespace);
    assert.equal((await client.get<KubernetesObject>(before)).status?.greedy_fn, undefined);

    // Redeployed with a manifest within its pin, it is taken up without a restart of the gateway (its
    // manifest read again 5 s after the start, then 10 s after that): no longer reported, its objects handled.
    await bad.restart(greedy());
    await gateway.waitFor(/function service "greedy" at \S+ is served now/, 60_000);
    const after = await createKopfExample(namespace, 'after-the-fix');
    assert.equal(await statusOnceThere(after, 'greedy_fn'), 'handled by greedy');
    assert.equal(await statusOnceThere(after, 'create_fn'), 'handled by good');
    assert.deepEqual(await reported(), { metric: 0, status: 200, ready: true, why: undefined });
    assert.equal(await gateway.stop(), 0, 'the gateway exits cleanly');
  });

  it("leaves out a service's webhooks the apiserver refuses, configures the other's, and takes them once fixed", async (t) => {
    const namespace = await testNamespace(t);
    // A long annotation prefix, as a deployer may choose: webhook names are <handler>.<service>.<prefix>,
    // and the apiserver takes 253 characters at most, so a long handler id of a long-named service
    // is a name it refuses, which no manifest check can know of (the prefix is the gateway's).
    const annotationPrefix = `${'long-prefix-of-this-deployment.'.repeat(4)}${namespace}.causeway.dev`;
    const service = 'a-service-whose-name-is-long-enough-to-make-its-webhooks-long';
    const pinned = { resources: [KOPFEXAMPLES], admission: [KOPFEXAMPLES] };
    const build = (id: string) => {
      const op = operator({ name: service, secret: TEST_SECRET });
      op.on.create('kopfexamples', function long_fn() {
        return 'handled by the long one';
      });
      op.on.validate('kopfexamples', { id }, ({ spec }) => {
        if (spec.field === 'long-forbidden') throw new AdmissionError('the long one says no');
      });
      return op;
    };
    const tooLong = build(`a_validating_handler_whose_id_is_long_${'x'.repeat(20)}`);
    const bad = await restartable(t, tooLong);
    const { gateway, logger } = await gatewayOf(
      t,
      namespace,
      { name: service, url: bad.url, scope: pinned },
      annotationPrefix,
    );

    // Its webhooks are left out, the other's configured; it is reported refused, with what the apiserver said.
    const said =
      /the apiserver refuses its validating webhooks: .*422 Invalid: .*must be no more than 253 characters/;
    await goodWebhookAnswers(namespace);
    const refused = await eventually('the long one reported', async () => {
      const now = await reported(gateway, service);
      return now.metric === 1 ? now : undefined;
    });
    assert.match(refused.why ?? '', said);
    assert.equal(refused.status, 200);
    assert.match(
      logger.lines.join(''),
      new RegExp(
        `the admission webhooks of function service "${service}" are not configured: ${said.source}`,
      ),
    );
    const configuration = await client.get<{ webhooks: Array<{ name: string }> }>(
      `/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/${annotationPrefix}`,
    );
    const names = configuration.webhooks.map((webhook) => webhook.name);
    assert.equal(names.length, 1, names.join(', '));
    assert.match(names[0] ?? '', /^check-field-[0-9a-f]{8}\.good\./);
    // Its other handlers are served meanwhile: only its admission is refused.
    const path = await createKopfExample(namespace, 'handled-meanwhile');
    assert.equal(await statusOnceThere(path, 'long_fn'), 'handled by the long one');

    // Redeployed with a shorter id, its webhook is configured at the next refresh, and answers.
    await bad.restart(build('short'));
    const served = await eventually('the long one’s webhooks taken', async () => {
      const now = await reported(gateway, service);
      return now.metric === 0 ? now : undefined;
    });
    assert.deepEqual(served, { metric: 0, status: 200, ready: true, why: undefined });
    const message = await admissionRefusal(namespace, { field: 'long-forbidden' });
    assert.match(message, /the long one says no/);
  });
});
