/**
 * A child the apiserver refuses fails its own handler only (issue 39, point 4 in another form): a
 * service whose child is invalid (422) shares an object with a well-behaved service; the other's
 * result lands, and so does the result of the failing service's other handler, while the failing
 * handler's progress says why and it is tried again after its backoff.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { operator } from '../../../functions/index.ts';
import type { KubeClient } from '../../../gateway/kube/client.ts';
import type { KubernetesObject, ServiceScope } from '../../../protocol/index.ts';
import { testNamespace } from '../../support/cluster.ts';
import {
  applyFile,
  createKopfExample,
  eventually,
  KOPFEXAMPLES_SCOPE,
  kubeClient,
  memoryLogger,
  progressOf,
  runOperator,
  TEST_SECRET,
} from '../../support/operator.ts';

const CRD = new URL('../../../examples/01-minimal/crd.yaml', import.meta.url);
const WITH_CONFIGMAPS: ServiceScope = { resources: ['kopfexamples.kopf.dev'], children: ['configmaps'] };

describe('a child the apiserver refuses', () => {
  let client: KubeClient;
  before(async () => {
    await applyFile(CRD);
    client = await kubeClient();
  });

  it("fails its handler alone: the other service's result and the service's other handler's land", async (t) => {
    const namespace = await testNamespace(t);
    let refusedCalls = 0;
    const refused = operator({ name: 'refused', secret: TEST_SECRET });
    refused.on.create('kopfexamples', async function create_fn({ apply }) {
      refusedCalls += 1;
      // A ConfigMap's data keys are letters, digits, '-', '_' and '.': the apiserver says 422.
      apply({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'bad' }, data: { 'not a key': 'x' } });
      return { made: true };
    });
    refused.on.create('kopfexamples', async function other_fn() {
      return { fine: true };
    });
    const honest = operator({ name: 'honest', secret: TEST_SECRET });
    honest.on.create('kopfexamples', async function honest_fn({ name }) {
      return { hello: name };
    });
    const logger = memoryLogger();
    const running = await runOperator([refused, honest], {
      namespaces: [namespace],
      logger,
      scopes: { refused: WITH_CONFIGMAPS, honest: KOPFEXAMPLES_SCOPE },
    });
    t.after(() => running.stop());

    const path = await createKopfExample(namespace, 'shared', {});
    const object = await eventually("the others' results, and the refusal in the progress", async () => {
      const current = await client.get<KubernetesObject>(path);
      const message = progressOf(current, 'refused')?.create_fn?.message;
      return current.status?.honest_fn && current.status.other_fn && message ? current : undefined;
    });
    assert.deepEqual(object.status?.honest_fn, { hello: 'shared' });
    assert.deepEqual(object.status?.other_fn, { fine: true });
    assert.equal(object.status?.create_fn, undefined, 'no result for a child never made');
    const failed = progressOf(object, 'refused')?.create_fn;
    assert.match(
      failed?.message ?? '',
      /^its children could not be applied: PATCH \/api\/v1\/namespaces\/[^/]+\/configmaps\/bad failed: 422 Invalid: ConfigMap "bad" is invalid: data\[not a key\]/,
    );
    assert.equal(failed?.success, undefined);
    assert.equal(progressOf(object, 'honest')?.honest_fn?.success, true);
    await eventually('the failing handler tried again after its backoff', async () =>
      refusedCalls >= 2 ? true : undefined,
    );
    assert.ok(
      logger.lines.some((line) =>
        /\/shared\] handler failed temporarily .*handler=create_fn .*its children could not be applied/.test(
          line,
        ),
      ),
      'the reason in the log',
    );
  });
});
