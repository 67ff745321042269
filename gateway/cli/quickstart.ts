#!/usr/bin/env node
/**
 * `npm start`: the whole loop in one command. Uses the configured cluster, or builds (first time)
 * and starts a local control plane; applies examples/01-minimal; runs it; shows the handler's result
 * on the object; keeps the operator running until Ctrl+C.
 */
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { startControlPlane } from '../../deploy/control-plane/index.ts';
import { startGateway } from '../gateway.ts';
import { applyManifests, parseManifests } from '../kube/apply.ts';
import { KubeClient } from '../kube/client.ts';
import { loadKubeConfig } from '../kube/kubeconfig.ts';
import { createLogger } from '../logging.ts';
import { ensureProcessSecret } from '../secret.ts';
import { sleep } from '../timing.ts';
import { loadOperatorModule } from './operator-module.ts';
import { untilSignal } from './process.ts';

const EXAMPLE = new URL('../../examples/01-minimal/', import.meta.url);
const NAMESPACE = 'default';
const OBJECT_PATH = `/apis/kopf.dev/v1/namespaces/${NAMESPACE}/kopfexamples/kopf-example-1`;
const say = (line: string) => process.stdout.write(`${line}\n`);

function configuredKubeconfig(): string | undefined {
  const candidates = [...(process.env.KUBECONFIG ?? '').split(':'), join(homedir(), '.kube', 'config')];
  return candidates.find((path) => path && existsSync(path));
}

async function quickstart(): Promise<void> {
  const logger = createLogger();
  let kubeconfig: KubeConfig;
  let stopControlPlane = async () => {};
  const configured = configuredKubeconfig();
  if (configured) {
    kubeconfig = loadKubeConfig(configured);
    say(`Using the cluster of ${configured} (context ${kubeconfig.getCurrentContext()}).`);
  } else {
    say('No kubeconfig found: starting a local control plane (etcd + kube-apiserver) on 127.0.0.1.');
    const controlPlane = await startControlPlane({ onProgress: (message) => say(`  ${message}`) });
    stopControlPlane = () => controlPlane.stop();
    kubeconfig = loadKubeConfig(controlPlane.kubeconfigPath);
    say(`  kubectl works too: export KUBECONFIG=${controlPlane.kubeconfigPath}`);
  }
  try {
    const client = await KubeClient.fromConfig(kubeconfig);
    const manifests = ['crd.yaml', 'object.yaml'].flatMap((file) =>
      parseManifests(readFileSync(new URL(file, EXAMPLE), 'utf8')),
    );
    say('Applying examples/01-minimal: the KopfExample CRD and kopf-example-1.');
    await applyManifests(client, manifests, { fieldManager: 'causeway-quickstart', namespace: NAMESPACE });

    say('Running examples/01-minimal/operator.ts (function service + gateway).');
    const secret = ensureProcessSecret();
    const functions = await loadOperatorModule(new URL('operator.ts', EXAMPLE).pathname);
    const gateway = await startGateway({
      functions: [functions],
      secret,
      kubeconfig,
      namespaces: [NAMESPACE],
      logger,
    });
    try {
      const result = await waitForResult(client, OBJECT_PATH, 60_000);
      say(`\nkopf-example-1 status.create_fn = ${JSON.stringify(result)}`);
      say('The operator keeps running: apply more KopfExamples to see them handled. Ctrl+C stops it.');
      await untilSignal(logger);
    } finally {
      await gateway.stop();
    }
  } finally {
    await stopControlPlane();
  }
}

async function waitForResult(client: KubeClient, path: string, timeoutMs: number): Promise<unknown> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const current = await client.get<{ status?: { create_fn?: unknown } }>(path);
    if (current.status?.create_fn !== undefined) return current.status.create_fn;
    await sleep(100);
  }
  throw new Error(`kopf-example-1 got no status.create_fn within ${timeoutMs / 1000}s: see the log above`);
}

quickstart().catch((error: unknown) => {
  process.stderr.write(`quickstart failed: ${error instanceof Error ? error.message : error}\n`);
  process.exit(1);
});
