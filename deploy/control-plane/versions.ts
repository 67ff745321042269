export const KUBERNETES_VERSION = 'v1.34.10';
export const ETCD_VERSION = 'v3.6.14';
