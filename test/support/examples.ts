/** Runs one of examples/ the way its README does: the KopfExample CRD, the operator, its object. */
import type { TestContext } from 'node:test';
import { type RunningOperator, runOperator } from 'causeway/testing';
import { testCluster, testNamespace } from './cluster.ts';
import { applyFile } from './operator.ts';

export function exampleFile(example: string, file: string): URL {
  return new URL(`../../examples/${example}/${file}`, import.meta.url);
}

/** Starts the example's operator in a fresh namespace, applies its object.yaml, and stops it after `t`. */
export async function startExample(
  t: TestContext,
  example: string,
): Promise<{ namespace: string; running: RunningOperator }> {
  await applyFile(exampleFile('01-minimal', 'crd.yaml'));
  const namespace = await testNamespace(t);
  const { default: op } = await import(exampleFile(example, 'operator.ts').href);
  const running = await runOperator(op, {
    namespaces: [namespace],
    kubeconfig: (await testCluster()).kubeconfigPath,
  });
  t.after(() => running.stop());
  await applyFile(exampleFile(example, 'object.yaml'), namespace);
  return { namespace, running };
}
