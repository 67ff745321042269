/** The kubeconfig the CLI reaches the cluster with. */
import { KubeConfig } from '@kubernetes/client-node';

/**
 * The kubeconfig in `file`; without one, the usual lookup: $KUBECONFIG, ~/.kube/config, then the
 * in-cluster service account.
 */
export function loadKubeConfig(file?: string): KubeConfig {
  const config = new KubeConfig();
  if (file) config.loadFromFile(file);
  else config.loadFromDefault();
  return config;
}
