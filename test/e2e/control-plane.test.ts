import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import test from 'node:test';
import { promisify } from 'node:util';
import { type ApiTarget, apiRequest } from '../../deploy/control-plane/https.ts';
import { KUBERNETES_VERSION } from '../../deploy/control-plane/versions.ts';
import { waitFor } from '../../deploy/control-plane/wait.ts';
import { testCluster, testNamespace } from '../support/cluster.ts';

const execFileAsync = promisify(execFile);

/** Controllers react within seconds; the margin is for a loaded CI machine. */
const CONTROLLER_DEADLINE_MS = 60_000;

async function create(
  api: ApiTarget,
  path: string,
  body: unknown,
): Promise<{ metadata: { name: string; uid: string } }> {
  const response = await apiRequest(api, 'POST', path, body);
  assert.equal(response.status, 201, `POST ${path}: ${response.body}`);
  return JSON.parse(response.body);
}

async function remove(api: ApiTarget, path: string): Promise<void> {
  const response = await apiRequest(api, 'DELETE', path);
  assert.ok(
    response.status === 200 || response.status === 202,
    `DELETE ${path}: ${response.status} ${response.body}`,
  );
}

async function untilGone(api: ApiTarget, path: string): Promise<void> {
  let last = '';
  await waitFor(
    `${path} to be gone`,
    async () => {
      const response = await apiRequest(api, 'GET', path);
      last = `last answer: ${response.status} ${response.body.slice(0, 500)}`;
      return response.status === 404 ? true : undefined;
    },
    { timeoutMs: CONTROLLER_DEADLINE_MS, intervalMs: 250, detail: () => last },
  );
}

function configMap(name: string, ownerReferences: unknown[] = []) {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, ownerReferences }, data: { key: 'value' } };
}

test('kubectl reaches the control plane through the kubeconfig', async () => {
  const { kubeconfigPath } = await testCluster();
  const { stdout } = await execFileAsync('kubectl', [
    '--kubeconfig',
    kubeconfigPath,
    'version',
    '-o',
    'json',
  ]);
  assert.equal(JSON.parse(stdout).serverVersion.gitVersion, KUBERNETES_VERSION);
});

test('deleting a namespace completes, because the namespace controller empties it', async () => {
  const api = await testCluster();
  const namespace = await create(api, '/api/v1/namespaces', {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { generateName: 'causeway-deletion-' },
  });
  const path = `/api/v1/namespaces/${namespace.metadata.name}`;
  await create(api, `${path}/configmaps`, configMap('content'));
  await remove(api, path);
  await untilGone(api, path);
});

test('deleting an owner garbage-collects its dependents', async (t) => {
  const api = await testCluster();
  const configMaps = `/api/v1/namespaces/${await testNamespace(t)}/configmaps`;
  const owner = await create(api, configMaps, configMap('owner'));
  await create(
    api,
    configMaps,
    configMap('dependent', [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'owner', uid: owner.metadata.uid }]),
  );
  await remove(api, `${configMaps}/owner`);
  await untilGone(api, `${configMaps}/dependent`);
});
