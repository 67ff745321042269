import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ControlPlane, startControlPlane } from '../deploy/control-plane/index.ts';
import { ensureHelm } from '../deploy/helm/build.ts';
import { packPackage } from './package/project.ts';
import { useCompileCache } from './unit-setup.ts';

let controlPlane: ControlPlane | undefined;
let packDirectory: string | undefined;

/**
 * One control plane for the whole run, the package packed once as npm publishes it, and helm for
 * test/deploy/helm.test.ts (built here, after the control plane, whose Go build its first build
 * shares); test files find them through the environment they inherit.
 */
export async function globalSetup(): Promise<void> {
  useCompileCache();
  packDirectory = await mkdtemp(join(tmpdir(), 'causeway-pack-'));
  const planeStarted = startControlPlane({
    onProgress: (message) => process.stderr.write(`[control plane] ${message}\n`),
  });
  const [started, tarball, helm] = await Promise.all([
    planeStarted,
    packPackage(packDirectory),
    planeStarted.then(() =>
      ensureHelm({ onProgress: (message) => process.stderr.write(`[helm] ${message}\n`) }),
    ),
  ]);
  process.env.CAUSEWAY_HELM = helm;
  controlPlane = started;
  process.env.KUBECONFIG = controlPlane.kubeconfigPath;
  // The commands the tests start write text, as at a terminal, for the tests to read as a person
  // would; test/e2e/logs.test.ts reads their JSON.
  process.env.CAUSEWAY_LOG_FORMAT = 'text';
  process.env.CAUSEWAY_TEST_KUBECONFIG = controlPlane.kubeconfigPath;
  process.env.CAUSEWAY_TEST_WEBHOOK_CLIENT_CA = controlPlane.webhookClientCaPath;
  process.env.CAUSEWAY_TEST_TARBALL = tarball;
}

export async function globalTeardown(): Promise<void> {
  await controlPlane?.stop();
  if (packDirectory) await rm(packDirectory, { recursive: true, force: true });
}
