/** What help says of the cluster the commands reach. */
export const CLUSTER_NOTE =
  'The cluster is the current context of $KUBECONFIG or ~/.kube/config, or the in-cluster account.';
