export { type ControlPlaneBinaries, cacheRoot, ensureBinaries } from './build.ts';
export {
  type ControlPlane,
  type ControlPlaneOptions,
  type RestartableComponent,
  type RestartOptions,
  startControlPlane,
} from './control-plane.ts';
export { writeKubeconfig } from './kubeconfig.ts';
export { freePorts } from './ports.ts';
export type { Progress } from './progress.ts';
export { ETCD_VERSION, KUBERNETES_VERSION } from './versions.ts';
