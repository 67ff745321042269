/**
 * A control plane of one test file's own, for tests that kill or reconfigure its components: the
 * shared one of test/setup.ts serves other test files at the same time, and must never see that.
 */
import { readFileSync } from 'node:fs';
import { KubeConfig } from '@kubernetes/client-node';
import {
  type ControlPlane,
  type ControlPlaneOptions,
  startControlPlane,
} from '../../deploy/control-plane/index.ts';
import { applyManifests, parseManifests } from '../../gateway/kube/apply.ts';
import { KubeClient } from '../../gateway/kube/client.ts';
import type { KubernetesObject } from '../../protocol/index.ts';

const KOPFEXAMPLE_CRD = new URL('../../examples/01-minimal/crd.yaml', import.meta.url);

export interface PrivateCluster {
  controlPlane: ControlPlane & { auditLogPath?: string };
  /** As the admin, through the kubeconfig of the control plane. */
  client: KubeClient;
  kubeconfig(): KubeConfig;
  /** A fresh namespace; the control plane and all in it go at stop(). */
  namespace(): Promise<string>;
  stop(): Promise<void>;
}

/**
 * etcd and kube-apiserver (no kube-controller-manager: nothing else writes) with the KopfExample CRD
 * of examples/01-minimal.
 */
export async function startPrivateCluster(options: ControlPlaneOptions = {}): Promise<PrivateCluster> {
  const controlPlane = await startControlPlane({ controllerManager: false, ...options });
  const kubeconfig = () => {
    const config = new KubeConfig();
    config.loadFromFile(controlPlane.kubeconfigPath);
    return config;
  };
  const client = await KubeClient.fromConfig(kubeconfig());
  try {
    await applyManifests(client, parseManifests(readFileSync(KOPFEXAMPLE_CRD, 'utf8')), {
      fieldManager: 'causeway-tests',
    });
  } catch (error) {
    await controlPlane.stop();
    throw error;
  }
  return {
    controlPlane,
    client,
    kubeconfig,
    async namespace() {
      const created = await client.request<KubernetesObject>('/api/v1/namespaces', {
        method: 'POST',
        body: { apiVersion: 'v1', kind: 'Namespace', metadata: { generateName: 'causeway-test-' } },
      });
      return created.metadata.name;
    },
    stop: () => controlPlane.stop(),
  };
}
