/**
 * Logging in through a function service (`--login-from <service>`, Kopf's on.login): the gateway
 * asks the service's login handler for its credentials to the Kubernetes API, before it makes any
 * request there, and again when they are about to expire or the API answers 401 (kube/client.ts).
 */
import { KubeConfig } from '@kubernetes/client-node';
import type { Credentials } from '../../protocol/index.ts';
import type { FunctionService } from '../dispatch/function-service.ts';
import type { Login } from '../kube/client.ts';
import type { Logger } from '../logging.ts';
import type { Activities } from './activities.ts';

/** A kubeconfig of the credentials alone: nothing is read from files or the environment. */
export function kubeConfigOf(credentials: Credentials): KubeConfig {
  const base64 = (pem: string) => Buffer.from(pem).toString('base64');
  const { server, token, certificateData, keyData, caData, insecure } = credentials;
  const config = new KubeConfig();
  config.loadFromClusterAndUser(
    {
      name: 'login',
      server,
      skipTLSVerify: insecure ?? false,
      ...(caData ? { caData: base64(caData) } : {}),
    },
    {
      name: 'login',
      ...(token ? { token } : {}),
      ...(certificateData && keyData ? { certData: base64(certificateData), keyData: base64(keyData) } : {}),
    },
  );
  return config;
}

/**
 * How the gateway logs in through `service`: each time, its login handler is called afresh, until
 * `stopping` aborts.
 */
export function loginThrough(
  service: FunctionService,
  activities: Activities,
  stopping: AbortSignal,
  logger: Logger,
): Login {
  return async () => {
    const credentials = await activities.login(service, stopping);
    const { server, insecure, expiration } = credentials;
    if (insecure) logger.warning(`the login of "${service.name}" skips verifying ${server}'s certificate`);
    logger.info(
      `logged in to ${server} through "${service.name}"${expiration ? `, until ${expiration}` : ''}`,
    );
    return {
      config: kubeConfigOf(credentials),
      ...(expiration ? { expiresAt: Date.parse(expiration) } : {}),
    };
  };
}
