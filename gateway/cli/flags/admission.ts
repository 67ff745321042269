/** The gateway's admission webhooks (run, gateway, dev; rbac takes the Secrets they keep). */
import { resolve } from 'node:path';
import type { ReachMode } from '../../../webhooks/reach.ts';
import type { SettingsPatch } from '../../settings.ts';
import { flag, type GroupValues, group, UsageError } from '../command-line.ts';
import type { ReadText } from '../process.ts';
import { integer, namespacedName, oneOf } from '../values.ts';

export const NGROK_AUTHTOKEN_SECRET = flag({
  name: 'ngrok-authtoken-secret',
  value: '<ns/name>',
  description: 'The Secret whose key "authtoken" holds the ngrok authtoken.',
});

export const WEBHOOK_CERTIFICATES = flag({
  name: 'webhook-certificates',
  value: '<ns/name>',
  default: 'in memory, new at every start',
  description: 'Keep its certificates in this Secret, shared by restarts and replicas.',
});

/** For operators with validate or mutate handlers (run, gateway, dev). */
export const ADMISSION = group(
  'Admission webhooks, for operators with validate or mutate handlers',
  flag({
    name: 'webhook-reach',
    value: '<how>',
    description:
      'How the apiserver reaches the webhook server: local (a URL on this host), service (see --webhook-service), ngrok (a tunnel; the authtoken from $NGROK_AUTHTOKEN or --ngrok-authtoken-secret), or auto (the default: service in a pod, local when the apiserver is on this host, ngrok otherwise).',
  }),
  flag({
    name: 'webhook-listen',
    value: '<host:port>',
    default: '127.0.0.1:0, any port; 0.0.0.0 at the port of --webhook-service',
    description: 'Where the HTTPS webhook server listens.',
  }),
  flag({
    name: 'webhook-service',
    value: '<ns/name:port>',
    description:
      'The Service through which the apiserver reaches it in a cluster (implies --webhook-reach service; listens on 0.0.0.0 at that port unless --webhook-listen names its targetPort).',
  }),
  NGROK_AUTHTOKEN_SECRET,
  flag({
    name: 'ngrok-domain',
    value: '<domain>',
    description: 'A reserved ngrok domain, for a URL that stays the same.',
  }),
  WEBHOOK_CERTIFICATES,
  flag({
    name: 'webhook-cert-file',
    value: '<file>',
    description:
      "Serve this certificate (with --webhook-key-file) instead of one the gateway makes, read again when it changes (cert-manager's way).",
  }),
  flag({ name: 'webhook-key-file', value: '<file>', description: 'Its private key.' }),
  flag({
    name: 'webhook-ca-file',
    value: '<file>',
    default: 'the certificate',
    description: 'What the apiserver is to trust for it.',
  }),
  flag({
    name: 'webhook-client-ca',
    value: '<file>',
    description:
      "Answer only clients whose certificate this CA signed (the apiserver's, with its --admission-control-config-file).",
  }),
);

export function admissionSettings(
  values: GroupValues<typeof ADMISSION>,
  readText: ReadText,
): SettingsPatch['admission'] {
  const settings: SettingsPatch['admission'] = {};
  const listen = values['webhook-listen'];
  if (listen !== undefined) {
    const match = /^(.+):(\d+)$/.exec(listen);
    if (!match) throw new UsageError(`--webhook-listen expects host:port, got "${listen}"`);
    settings.listen = {
      host: (match[1] as string).replace(/^\[|\]$/g, ''),
      port: integer(match[2] as string, '--webhook-listen'),
    };
  }
  const service = values['webhook-service'];
  if (service !== undefined) {
    const match = /^([a-z0-9-]+)\/([a-z0-9-]+):(\d+)$/.exec(service);
    if (!match) throw new UsageError(`--webhook-service expects namespace/name:port, got "${service}"`);
    settings.reach = 'service';
    settings.service = {
      namespace: match[1] as string,
      name: match[2] as string,
      port: integer(match[3] as string, '--webhook-service'),
    };
    // Where the Service sends the apiserver, in the pod: at its own port unless its targetPort differs.
    settings.listen ??= { host: '0.0.0.0', port: settings.service.port };
  }
  const secret = values['webhook-certificates'];
  if (secret !== undefined) settings.certificates = namespacedName(secret, '--webhook-certificates');
  const reach = values['webhook-reach'];
  if (reach !== undefined) settings.reach = oneOf(reach, WEBHOOK_REACH_MODES, '--webhook-reach');
  const tokenSecret = values['ngrok-authtoken-secret'];
  const domain = values['ngrok-domain'];
  if (tokenSecret !== undefined || domain !== undefined) {
    settings.ngrok = {
      ...(tokenSecret !== undefined
        ? { authtokenSecret: namespacedName(tokenSecret, '--ngrok-authtoken-secret') }
        : {}),
      ...(domain !== undefined ? { domain } : {}),
    };
  }
  const [cert, key, ca] = [
    values['webhook-cert-file'],
    values['webhook-key-file'],
    values['webhook-ca-file'],
  ];
  if (cert !== undefined || key !== undefined || ca !== undefined) {
    if (cert === undefined && key === undefined) {
      throw new UsageError('--webhook-ca-file needs --webhook-cert-file and --webhook-key-file');
    }
    if (cert === undefined || key === undefined) {
      throw new UsageError('--webhook-cert-file and --webhook-key-file go together');
    }
    settings.certificateFiles = {
      cert: resolve(cert),
      key: resolve(key),
      ...(ca ? { ca: resolve(ca) } : {}),
    };
  }
  const clientCa = values['webhook-client-ca'];
  if (clientCa !== undefined) settings.clientCa = readText(clientCa);
  return settings;
}

const WEBHOOK_REACH_MODES: readonly ReachMode[] = ['auto', 'local', 'service', 'ngrok'];
