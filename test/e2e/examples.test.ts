/** Every example, run for real, through the public testing kit (`causeway/testing`). */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import type { KubernetesObject } from 'causeway/protocol';
import { callHandlers, runOperator } from 'causeway/testing';
import { parseManifests } from '../../gateway/kube/apply.ts';
import { testCluster, testNamespace } from '../support/cluster.ts';
import { applyFile, eventually, kubeClient } from '../support/operator.ts';

const example = (name: string, file: string) => new URL(`../../examples/${name}/${file}`, import.meta.url);

describe('examples/01-minimal', async () => {
  const { default: op } = await import(example('01-minimal', 'operator.ts').href);
  const [object] = parseManifests(readFileSync(example('01-minimal', 'object.yaml'), 'utf8')) as [
    KubernetesObject,
  ];

  it('greets in-process, with a synthetic cause', async () => {
    const response = await callHandlers(op, {
      reason: 'create',
      body: { ...object, metadata: { ...object.metadata, namespace: 'default', uid: 'uid-1' } },
    });
    assert.deepEqual(response.outcomes, {
      create_fn: { status: 'success', result: { message: 'hello kopf-example-1' } },
    });
    assert.match(response.logs[0]?.message ?? '', /creating kopf-example-1 with spec \{"duration":"1m"/);
  });

  it('greets kopf-example-1 on a real cluster', async (t) => {
    await applyFile(example('01-minimal', 'crd.yaml'));
    const namespace = await testNamespace(t);
    const running = await runOperator(op, {
      namespaces: [namespace],
      kubeconfig: (await testCluster()).kubeconfigPath,
    });
    t.after(() => running.stop());
    await applyFile(example('01-minimal', 'object.yaml'), namespace);
    const client = await kubeClient();
    const handled = await eventually('status.create_fn', async () => {
      const current = await client.get<KubernetesObject>(
        `/apis/kopf.dev/v1/namespaces/${namespace}/kopfexamples/kopf-example-1`,
      );
      return current.status?.create_fn === undefined ? undefined : current;
    });
    assert.deepEqual(handled.status?.create_fn, { message: 'hello kopf-example-1' });
    assert.ok(
      running.logs.some((line) => line.includes(`[${namespace}/kopf-example-1] handler create_fn succeeded`)),
    );
  });
});
