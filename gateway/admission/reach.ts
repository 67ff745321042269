/**
 * Where the apiserver reaches the webhook server, by the mode chosen at start (webhooks/reach.ts has
 * the ways): the way opened once the server listens, and the hosts its certificate names.
 */
import { existsSync } from 'node:fs';
import {
  chooseMode,
  localHosts,
  localReach,
  ngrokReach,
  type Reach,
  type ReachMode,
  serviceReach,
  TunnelError,
  type Way,
} from '../../webhooks/reach.ts';
import type { KubeClient } from '../kube/client.ts';
import { type SecretName, secretPath } from '../kube/secrets.ts';
import type { Logger } from '../logging.ts';
import type { Settings } from '../settings.ts';
import type { AdmissionOptions } from './admission.ts';

type Mode = Exclude<ReachMode, 'auto'>;

/** Mounted in every pod with a service account: with KUBERNETES_SERVICE_HOST, how a pod knows it is one. */
const SERVICE_ACCOUNT_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';

/** The mode of the settings, or the one that fits where the gateway runs; refused where it cannot work. */
export function reachMode(settings: Settings['admission'], client: KubeClient, logger: Logger): Mode {
  const apiserverHost = new URL(client.server).hostname;
  const mode = chooseMode(settings.reach, {
    inPod: Boolean(process.env.KUBERNETES_SERVICE_HOST) && existsSync(SERVICE_ACCOUNT_TOKEN),
    apiserverHost,
  });
  if (settings.reach === 'auto' && mode === 'ngrok') {
    // A tunnel is a public URL to this process: said, not chosen silently.
    logger.warning(
      `--webhook-reach auto: the apiserver (${apiserverHost}) is not on this machine and this is no pod, so ` +
        'the admission webhooks are reached through an ngrok tunnel, a public URL to this process; give ' +
        '--webhook-reach ngrok to choose it, or service or local for another way',
    );
  }
  if (mode === 'service' && !settings.service) {
    throw new Error(
      'admission webhooks in a pod are reached through a Service: name it with --webhook-service',
    );
  }
  if (mode === 'service' && settings.listen.port === 0) {
    // Any free port would be one the Service does not send the apiserver to.
    throw new Error(
      'admission webhooks reached through a Service listen at the port it sends the apiserver to (its targetPort): give it with --webhook-listen (settings.admission.listen), not port 0',
    );
  }
  return mode;
}

/** The hosts the serving certificate names: those the apiserver reaches the server at. */
export function certificateHosts(mode: Mode, settings: Settings['admission']): string[] {
  if (mode === 'service' && settings.service) {
    const { name, namespace } = settings.service;
    return [
      name,
      `${name}.${namespace}`,
      `${name}.${namespace}.svc`,
      `${name}.${namespace}.svc.cluster.local`,
    ];
  }
  return localHosts(settings.listen.host, settings.url);
}

/** Opens the way in to the server listening at `port`, and says where it is. */
export async function reachServer(
  mode: Mode,
  options: Pick<AdmissionOptions, 'client' | 'settings' | 'logger'>,
  port: number,
): Promise<Way> {
  const { settings, logger } = options;
  const way = await (await reachOf(mode, options))({ host: settings.listen.host, port });
  const { clientConfig } = way;
  if ('url' in clientConfig) logger.info(`the apiserver reaches them at ${clientConfig.url}`);
  else {
    const { namespace, name, port } = clientConfig.service;
    logger.info(
      `the apiserver reaches them through the Service ${namespace}/${name} at https://${name}.${namespace}.svc:${port}`,
    );
  }
  return way;
}

/** The way in for `mode`. */
async function reachOf(
  mode: Mode,
  { settings, client }: Pick<AdmissionOptions, 'client' | 'settings'>,
): Promise<Reach> {
  switch (mode) {
    case 'service':
      return serviceReach(settings.service as NonNullable<typeof settings.service>);
    case 'ngrok': {
      const secret = settings.ngrok?.authtokenSecret;
      const authtoken = secret ? await readAuthtoken(client, secret) : undefined;
      return ngrokReach({
        ...(authtoken ? { authtoken } : {}),
        ...(settings.ngrok?.domain ? { domain: settings.ngrok.domain } : {}),
        ...(settings.ngrok?.forward ? { forward: settings.ngrok.forward } : {}),
      });
    }
    default:
      return localReach(settings.url);
  }
}

async function readAuthtoken(client: KubeClient, secret: SecretName): Promise<string> {
  const read = await client.get<{ data?: Record<string, string> }>(secretPath(secret));
  const token = read.data?.authtoken;
  if (!token) throw new TunnelError(`the Secret ${secret.namespace}/${secret.name} has no key "authtoken"`);
  return Buffer.from(token, 'base64').toString().trim();
}
