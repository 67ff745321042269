/** What the commands take from the process around them: the files their flags name, and the signals that stop them. */
import { readFileSync } from 'node:fs';
import { loadKubeConfig } from '../kube/kubeconfig.ts';
import type { Logger } from '../logging.ts';

/** A file's text, by its path: how the options read the files their flags name (tests pass their own). */
export type ReadText = (path: string) => string;

/**
 * Where the gateway runs: the pod's namespace ($POD_NAMESPACE), which it serves to no function service
 * and is the peering namespace's default, else the kubeconfig context's.
 */
export interface Whereabouts {
  podNamespace?: string | undefined;
  contextNamespace?: string | undefined;
}

/** A file's text, for the options, which read none themselves. */
export function readText(path: string): string {
  return readFileSync(path, 'utf8');
}

/** Where this process runs, for the defaults that depend on it: its pod's namespace, its kubeconfig context's. */
export function whereabouts(): Whereabouts {
  const config = loadKubeConfig();
  return {
    podNamespace: process.env.POD_NAMESPACE || undefined,
    contextNamespace: config.getContextObject(config.getCurrentContext())?.namespace,
  };
}

/** Resolves on the first SIGINT or SIGTERM; a second one exits at once. */
export function untilSignal(logger: Logger): Promise<void> {
  return new Promise((resolve) => {
    const stop = (signal: string) => {
      logger.info(`${signal} received, stopping`);
      process.once('SIGINT', () => process.exit(130));
      process.once('SIGTERM', () => process.exit(143));
      resolve();
    };
    process.once('SIGINT', () => stop('SIGINT'));
    process.once('SIGTERM', () => stop('SIGTERM'));
  });
}
