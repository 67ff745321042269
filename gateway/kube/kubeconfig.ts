/** The kubeconfig the CLI and the gateway reach the cluster with, unless given one. */
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
