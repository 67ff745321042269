import { readFile } from 'node:fs/promises';
import type { TestContext } from 'node:test';
import { type ApiTarget, apiRequest } from '../../deploy/control-plane/https.ts';
import { readKubeconfig } from '../../deploy/control-plane/kubeconfig.ts';

export interface TestCluster extends ApiTarget {
  kubeconfigPath: string;
}

let cluster: Promise<TestCluster> | undefined;

/** The control plane test/setup.ts started for this run. */
export function testCluster(): Promise<TestCluster> {
  cluster ??= (async () => {
    const kubeconfigPath = process.env.CAUSEWAY_TEST_KUBECONFIG;
    if (!kubeconfigPath) {
      throw new Error(
        'CAUSEWAY_TEST_KUBECONFIG is not set: run node --test with --test-global-setup=test/setup.ts',
      );
    }
    return { kubeconfigPath, ...(await readKubeconfig(kubeconfigPath)) };
  })();
  return cluster;
}

/**
 * The CA that signed the client certificate the test apiserver presents to admission webhooks: its
 * file (for `--webhook-client-ca`) and its PEM.
 */
export async function webhookClientCa(): Promise<{ path: string; pem: string }> {
  const path = process.env.CAUSEWAY_TEST_WEBHOOK_CLIENT_CA;
  if (!path) {
    throw new Error(
      'CAUSEWAY_TEST_WEBHOOK_CLIENT_CA is not set: run node --test with --test-global-setup=test/setup.ts',
    );
  }
  return { path, pem: await readFile(path, 'utf8') };
}

/**
 * A fresh namespace, named after `t` in an annotation, and left in place: the control plane is thrown
 * away at the end of the run, and deleting a namespace costs it more than most tests do there. The
 * namespace controller lists and deletes each namespaced resource type in it, some fifty: a full run
 * (some 220 namespaces) took 843 CPU seconds without their deletion against 1,056 with it, both on
 * the shared 2-core machine. (controller-runtime's envtest, with no namespace controller, leaves them too.)
 */
export async function testNamespace(t?: TestContext): Promise<string> {
  const api = await testCluster();
  const response = await apiRequest(api, 'POST', '/api/v1/namespaces', {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: {
      generateName: 'causeway-test-',
      ...(t ? { annotations: { 'causeway.dev/test': t.fullName } } : {}),
    },
  });
  if (response.status !== 201)
    throw new Error(`creating a test namespace: ${response.status} ${response.body}`);
  const name: string = JSON.parse(response.body).metadata.name;
  return name;
}
