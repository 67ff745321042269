/**
 * A function service redeployed with other handlers, under a gateway that keeps running: told so by
 * the service's first answer, the gateway reads the manifests again, serves the new handlers, and drops
 * the webhooks of the handlers gone.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AdmissionError, operator } from '../../functions/index.ts';
import type { FetchHandler } from '../../gateway/dispatch/transport.ts';
import type { KubernetesObject } from '../../protocol/index.ts';
import { testNamespace } from '../support/cluster.ts';
import {
  applyFile,
  createKopfExample,
  eventually,
  kubeClient,
  memoryLogger,
  runOperator,
  TEST_SECRET,
} from '../support/operator.ts';

const CRD = new URL('../../examples/01-minimal/crd.yaml', import.meta.url);

describe('a function service redeployed under a running gateway', () => {
  it('is served as it is now: new handlers called, the webhooks of removed ones gone', async (t) => {
    await applyFile(CRD);
    const namespace = await testNamespace(t);
    const client = await kubeClient();
    const before = operator({ name: 'redeployed', secret: TEST_SECRET });
    before.on.create('kopfexamples', function create_fn() {
      return { version: 1 };
    });
    before.on.validate('kopfexamples', function no_forbidden({ spec }) {
      if (spec.field === 'forbidden') throw new AdmissionError('forbidden');
    });
    const after = operator({ name: 'redeployed', secret: TEST_SECRET });
    after.on.create('kopfexamples', function create_v2() {
      return { version: 2 };
    });
    // One URL, behind which the deployment changes.
    let deployed: FetchHandler = before;
    const logger = memoryLogger();
    const prefix = `${namespace}.causeway.dev`;
    const running = await runOperator(
      { name: 'redeployed', fetch: (request) => deployed.fetch(request) },
      {
        namespaces: [namespace],
        logger,
        identity: { annotationPrefix: prefix },
        // No refresh by the clock in this test: only the service's own answer makes the gateway look.
        settings: { calls: { manifestRefreshMs: 600_000 } },
      },
    );
    t.after(() => running.stop());
    const configuration = `/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/${prefix}`;
    await client.get(configuration); // written at the start

    const path = await createKopfExample(namespace, 'first');
    await eventually(
      'first handled',
      async () => (await client.get<KubernetesObject>(path)).status?.create_fn,
    );

    deployed = after;
    // Reviewed at once, before the gateway knows: the service says it has no such handler any more,
    // so the review is let through (not refused as undecided) and the manifest is read again.
    const second = await createKopfExample(namespace, 'second', { field: 'forbidden' });
    await eventually('the redeploy noticed', async () =>
      logger.lines.some((line) => line.includes('"redeployed" at') && line.includes('changed its handlers'))
        ? true
        : undefined,
    );
    assert.ok(
      logger.lines.some((line) => line.includes('admission handler no_forbidden is gone from "redeployed"')),
      logger.lines.join(''),
    );
    const status = await eventually(
      'second handled',
      async () => (await client.get<KubernetesObject>(second)).status?.create_v2,
    );
    assert.deepEqual(status, { version: 2 });
    assert.equal((await client.get<KubernetesObject>(second)).status?.create_fn, undefined);
    await assert.rejects(
      client.get(configuration),
      /404|not found/i,
      'no validating handler, no configuration',
    );
  });
});
