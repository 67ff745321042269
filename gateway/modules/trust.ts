/**
 * Trust, what the gateway holds before it calls anyone: its cluster client (from a kubeconfig, or later
 * from a service's login handler), what it signs its calls with (a shared secret, or its own keys kept
 * in a Secret), and the CA that issues the function services' certificates. The signing keys and the
 * certificates are ready before any service is asked for its manifest: that request is signed, and
 * goes over TLS, too.
 */
import type { FunctionService } from '../dispatch/function-service.ts';
import { hmacSigner, keySigner, type Signer } from '../dispatch/signer.ts';
import { KubeClient, type RequestObserver } from '../kube/client.ts';
import { loadKubeConfig } from '../kube/kubeconfig.ts';
import type { Logger } from '../logging.ts';
import { part } from '../manager/manager.ts';
import type { Activities } from '../services/activities.ts';
import { FunctionCertificates } from '../services/function-certificates.ts';
import { loginThrough } from '../services/login.ts';
import { SigningKeys } from '../services/signing-keys.ts';
import type { Ground } from './ground.ts';
import type { Observability } from './observability.ts';

export interface Credentials {
  /** Undefined while the gateway is to log in through a service: it has no cluster access until then. */
  client: KubeClient | undefined;
  signer: Signer | undefined;
  certificates: FunctionCertificates | undefined;
}

/** Reads what the gateway signs with and issues certificates from; their engines join the trust stage. */
export async function trust(
  { options, settings, logger, manager }: Ground,
  { observeRequest }: Observability,
): Promise<Credentials> {
  const { loginFrom } = options;
  if (loginFrom && options.kubeconfig) {
    throw new Error(`a kubeconfig is given as well as a login through "${loginFrom}": give one`);
  }
  const client = loginFrom
    ? undefined
    : await KubeClient.fromConfig(options.kubeconfig ?? loadKubeConfig(), observeRequest, { logger });
  let signer: Signer | undefined = options.secret ? hmacSigner(options.secret) : undefined;
  if (settings.signing.keys) {
    if (!client) {
      throw new Error(
        `the gateway cannot read its signing keys from a Secret before it logs in through "${loginFrom}", ` +
          'whose calls they would sign: share a secret with that service instead (--function-secret, --secret-file)',
      );
    }
    const keys = new SigningKeys({
      client,
      location: settings.signing.keys,
      settings: settings.signing,
      logger,
    });
    await keys.start();
    await manager.add('trust', part(keys.name, keys.placement, { stop: () => keys.stop() }));
    signer = keySigner(() => keys.current());
  }
  let certificates: FunctionCertificates | undefined;
  if (settings.calls.certificateAuthority) {
    if (!client) {
      throw new Error(
        `the gateway cannot issue the function services' certificates before it logs in through "${loginFrom}"`,
      );
    }
    const issuer = new FunctionCertificates({
      client,
      authority: settings.calls.certificateAuthority,
      checkMs: settings.calls.certificateCheckMs,
      logger,
    });
    await issuer.start();
    await manager.add('trust', part(issuer.name, issuer.placement, { stop: () => issuer.stop() }));
    certificates = issuer;
  }
  return { client, signer, certificates };
}

/** The cluster client: the kubeconfig's, or one that logs in with what the service `loginFrom` gives. */
export async function clusterClient(
  credentials: Credentials,
  login: { from: string | undefined; services: readonly FunctionService[]; activities: Activities },
  stopping: AbortSignal,
  logger: Logger,
  observe?: RequestObserver,
): Promise<KubeClient> {
  if (credentials.client) return credentials.client;
  const service = serviceNamed(login.services, login.from as string);
  return KubeClient.fromLogin(loginThrough(service, login.activities, stopping, logger), observe, {
    logger,
  });
}

/** The service named `name`, to log in through. */
function serviceNamed(services: readonly FunctionService[], name: string): FunctionService {
  const service = services.find((candidate) => candidate.name === name);
  if (service) return service;
  throw new Error(
    `the gateway is to log in through "${name}", which is none of its function services: ` +
      services.map((candidate) => `"${candidate.name}"`).join(', '),
  );
}
