/**
 * A function service in another language: examples/python-function, Python's standard library only,
 * passes the conformance checks and serves a gateway on the real control plane.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { runConformance } from '../../gateway/conformance/checks.ts';
import { startGateway } from '../../gateway/gateway.ts';
import { testNamespace } from '../support/cluster.ts';
import {
  applyFile,
  createKopfExample,
  kubeClient,
  kubeConfig,
  memoryLogger,
  statusOnceThere,
  TEST_SECRET,
} from '../support/operator.ts';
import { startCli } from '../support/processes.ts';

const FUNCTION = new URL('../../examples/python-function/function.py', import.meta.url).pathname;
const CRD = new URL('../../examples/01-minimal/crd.yaml', import.meta.url);

describe('a function service in Python', () => {
  it('passes conformance, and handles objects for the gateway', async (t) => {
    const python = startCli('python3', [FUNCTION, '--port', '0'], {
      PATH: process.env.PATH,
      CAUSEWAY_SECRET: TEST_SECRET,
    });
    t.after(() => python.stop());
    const url = (await python.waitFor(/listening on (http:\/\/\S+)/))[1] as string;
    const secret = new TextEncoder().encode(TEST_SECRET);

    const results = await runConformance({ url, name: 'py-greeter', signing: { secret } });
    assert.deepEqual(
      results.filter((result) => result.failure),
      [],
    );
    assert.equal(results.length, 18);

    await applyFile(CRD);
    const namespace = await testNamespace(t);
    const gateway = await startGateway({
      // A secret shared with this service alone, and what it may reach: KopfExamples.
      functions: [{ name: 'py-greeter', url, secret, scope: { resources: ['kopfexamples.kopf.dev'] } }],
      kubeconfig: await kubeConfig(),
      namespaces: [namespace],
      logger: memoryLogger(),
    });
    t.after(() => gateway.stop());
    const path = await createKopfExample(namespace, 'from-python', { field: 'a' });
    assert.deepEqual(await statusOnceThere(path, 'create_fn'), {
      message: 'hello from-python',
      from: 'python',
    });
    await (await kubeClient()).patch(path, 'merge', { spec: { field: 'b' } });
    assert.deepEqual(await statusOnceThere(path, 'update_fn'), { changed: ['spec.field'] });
  });
});
