export { type ControlPlaneBinaries, cacheRoot, ensureBinaries } from './build.ts';
// For other Go programs built and cached as the control plane is (bench/'s controller-runtime baseline).
export { cachedBinary, contentKey } from './cached-binary.ts';
export {
  type ControlPlane,
  type ControlPlaneOptions,
  type RestartableComponent,
  type RestartOptions,
  startControlPlane,
} from './control-plane.ts';
export { buildGoModule, requirements } from './go-build.ts';
export { writeKubeconfig } from './kubeconfig.ts';
export { freePorts } from './ports.ts';
export type { Progress } from './progress.ts';
export { ETCD_VERSION, KUBERNETES_VERSION } from './versions.ts';
