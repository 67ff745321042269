import { type ControlPlane, startControlPlane } from './cluster/index.ts';

let controlPlane: ControlPlane | undefined;

/** One control plane for the whole run; test files find it through the environment they inherit. */
export async function globalSetup(): Promise<void> {
  controlPlane = await startControlPlane({
    onProgress: (message) => process.stderr.write(`[control plane] ${message}\n`),
  });
  process.env.KUBECONFIG = controlPlane.kubeconfigPath;
  process.env.CAUSEWAY_TEST_KUBECONFIG = controlPlane.kubeconfigPath;
}

export async function globalTeardown(): Promise<void> {
  await controlPlane?.stop();
}
