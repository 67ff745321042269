/**
 * Runs an operator inside a test, against a real cluster, the way `causeway run` does (Kopf's
 * KopfRunner): the gateway calls the operator's fetch handler in this process, signed as always.
 */
import { KubeConfig } from '@kubernetes/client-node';
import {
  createLogger,
  ensureProcessSecret,
  type FetchHandler,
  type Gateway,
  type GatewayOptions,
  startGateway,
} from '../gateway/index.ts';
import { encodeSecret } from '../protocol/index.ts';

export interface RunOptions extends Omit<GatewayOptions, 'functions' | 'secret' | 'kubeconfig'> {
  /**
   * A kubeconfig file or a loaded KubeConfig; defaults to $KUBECONFIG, ~/.kube/config, in-cluster.
   * None with `loginFrom`.
   */
  kubeconfig?: string | KubeConfig;
  /** The operator's secret, if it was given one explicitly; else $CAUSEWAY_SECRET, set if missing. */
  secret?: string;
}

export interface RunningOperator {
  readonly gateway: Gateway;
  /** What the gateway logged, line by line. */
  readonly logs: readonly string[];
  stop(): Promise<void>;
}

export async function runOperator(
  operator: FetchHandler,
  options: RunOptions = {},
): Promise<RunningOperator> {
  const { kubeconfig, secret, ...rest } = options;
  const logs: string[] = [];
  const processSecret = ensureProcessSecret();
  const gateway = await startGateway({
    logger: createLogger({ level: 'debug', sink: { write: (line) => logs.push(line.trimEnd()) } }),
    ...rest,
    functions: [operator],
    secret: secret === undefined ? processSecret : encodeSecret(secret),
    // Logging in through the operator, the gateway has no kubeconfig.
    ...(rest.loginFrom ? {} : { kubeconfig: loadKubeConfig(kubeconfig) }),
  });
  await gateway.synced;
  return { gateway, logs, stop: () => gateway.stop() };
}

function loadKubeConfig(kubeconfig: string | KubeConfig | undefined): KubeConfig {
  if (kubeconfig instanceof KubeConfig) return kubeconfig;
  const config = new KubeConfig();
  if (kubeconfig) config.loadFromFile(kubeconfig);
  else config.loadFromDefault();
  return config;
}
