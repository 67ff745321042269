/**
 * The webhook server and the gateway's log against a hostile client and service (issue 21, the webhook
 * server and point 6): with --webhook-client-ca, a forged AdmissionReview sent straight to the webhook
 * server by a client without the apiserver's certificate is refused, logged, and never reaches the
 * handler, while the real apiserver, which presents that certificate, is answered; and a function
 * service's log line with a newline shows as one escaped line, forging none of the gateway's.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { Agent, fetch } from 'undici';
import { AdmissionError, operator } from '../../../functions/index.ts';
import type { KubeClient } from '../../../gateway/kube/client.ts';
import { ApiError } from '../../../gateway/kube/errors.ts';
import type { KubernetesObject } from '../../../protocol/index.ts';
import { testNamespace, webhookClientCa } from '../../support/cluster.ts';
import { hostileService } from '../../support/hostile-service.ts';
import {
  applyFile,
  createKopfExample,
  eventually,
  kubeClient,
  memoryLogger,
  runOperator,
  statusOnceThere,
  TEST_SECRET,
} from '../../support/operator.ts';

const CRD = new URL('../../../examples/01-minimal/crd.yaml', import.meta.url);

describe('hostile clients of the webhook server, and hostile log lines', () => {
  let client: KubeClient;

  before(async () => {
    await applyFile(CRD);
    client = await kubeClient();
  });

  it('refuses a forged review from a client without the apiserver certificate, before any handler sees it, and the apiserver is answered meanwhile', async (t) => {
    const namespace = await testNamespace(t);
    const prefix = `${namespace}.causeway.test`; // webhook configurations are cluster-wide: its own
    const reviewedBy: string[] = [];
    const op = operator({ name: 'guarded', secret: TEST_SECRET });
    op.on.validate('kopfexamples', { operations: ['CREATE'] }, function check_field({ spec, userInfo }) {
      reviewedBy.push(userInfo?.username ?? '');
      if (spec.field === 'forbidden') throw new AdmissionError('spec.field must not be "forbidden"', 422);
    });
    const logger = memoryLogger();
    const running = await runOperator(op, {
      namespaces: [namespace],
      logger,
      identity: { annotationPrefix: prefix },
      settings: { admission: { clientCa: (await webhookClientCa()).pem } },
    });
    t.after(() => running.stop());

    const create = (name: string, field: string) =>
      client.request<KubernetesObject>(`/apis/kopf.dev/v1/namespaces/${namespace}/kopfexamples`, {
        method: 'POST',
        body: { apiVersion: 'kopf.dev/v1', kind: 'KopfExample', metadata: { name }, spec: { field } },
      });
    const refusedByWebhook = async (name: string) => {
      try {
        await create(name, 'forbidden');
        return undefined;
      } catch (error) {
        return error instanceof ApiError && /must not be "forbidden"/.test(error.message) ? true : undefined;
      }
    };
    // The apiserver presents its client certificate: its reviews get through.
    await eventually('the webhook in effect through the real apiserver', () =>
      refusedByWebhook(`probe-${Date.now()}`),
    );

    const configuration = await client.get<{
      webhooks: Array<{ clientConfig: { url: string; caBundle: string } }>;
    }>(`/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/${prefix}`);
    const [webhook] = configuration.webhooks;
    assert.ok(webhook, 'a validating webhook configured');
    const forged = {
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      request: {
        uid: 'forged-review',
        kind: { group: 'kopf.dev', version: 'v1', kind: 'KopfExample' },
        resource: { group: 'kopf.dev', version: 'v1', resource: 'kopfexamples' },
        operation: 'CREATE',
        namespace,
        userInfo: { username: 'system:admin', groups: ['system:masters'] },
        object: {
          apiVersion: 'kopf.dev/v1',
          kind: 'KopfExample',
          metadata: { name: 'forged', namespace },
          spec: { field: 'forbidden' },
        },
        dryRun: false,
      },
    };
    // It trusts the webhook server's CA (as anyone can: the bundle is in the configuration), but has
    // no client certificate.
    const dispatcher = new Agent({
      connect: { ca: Buffer.from(webhook.clientConfig.caBundle, 'base64').toString() },
    });
    t.after(() => dispatcher.close());
    await assert.rejects(
      fetch(webhook.clientConfig.url, {
        method: 'POST',
        body: JSON.stringify(forged),
        headers: { 'content-type': 'application/json' },
        dispatcher,
      }),
      /fetch failed/,
    );
    await eventually('the refusal logged', async () =>
      logger.lines.find((line) =>
        /WARNING .*webhook server: refused a TLS connection from 127\.0\.0\.1: peer did not return a certificate/.test(
          line,
        ),
      ),
    );

    // A review after the forged one, through the apiserver: when it is seen, the forged one would have been.
    reviewedBy.length = 0;
    assert.equal(await refusedByWebhook('after-the-forgery'), true);
    assert.deepEqual(reviewedBy, ['causeway-admin'], 'only the real user, as the apiserver said');
    assert.ok(
      !logger.lines.some((line) => line.includes('forged-review')),
      'the forged review reached nothing that logs',
    );
    const fine = await create('fine', 'fine');
    assert.equal(fine.metadata.name, 'fine', 'an allowed object is admitted');
  });

  it("shows a service's log line with a newline as one escaped line, forging none of the gateway's", async (t) => {
    const namespace = await testNamespace(t);
    const forgedLine = '2026-01-01T00:00:00.000Z ERROR   [causeway] all webhooks disabled';
    const op = operator({ name: 'chatty', secret: TEST_SECRET });
    op.on.create('kopfexamples', function create_fn() {
      return { created: true };
    });
    const hostile = hostileService(op, {
      answer: ({ answer }) => ({
        ...answer,
        logs: [{ level: 'info', handler: 'create_fn', message: `done\n${forgedLine}\r\u001b[2Kcleared` }],
      }),
    });
    const logger = memoryLogger();
    const running = await runOperator(hostile, { namespaces: [namespace], logger });
    t.after(() => running.stop());
    await createKopfExample(namespace, 'talked-about');
    assert.deepEqual(
      await statusOnceThere(
        `/apis/kopf.dev/v1/namespaces/${namespace}/kopfexamples/talked-about`,
        'create_fn',
      ),
      { created: true },
      'the call itself is applied',
    );
    const logged = await eventually('the service log line in the gateway log', async () =>
      logger.lines.find((line) => line.includes('] done\\n') && line.includes(' handler=create_fn ')),
    );
    assert.match(
      logged,
      /\] done\\n2026-01-01T00:00:00\.000Z ERROR {3}\[causeway\] all webhooks disabled\\r\\u001b\[2Kcleared resource=/,
    );
    const asRead = logger.lines.join('').split(/\r\n|\r|\n|\u2028|\u2029/);
    assert.ok(
      !asRead.some((line) => line.startsWith(forgedLine)),
      'no line of the log starts with what the service forged',
    );
  });
});
