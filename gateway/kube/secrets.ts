/**
 * The Secrets the gateway keeps its own material in (signing keys, certificates): one way to name and
 * write them, names escaped, each labelled as the gateway's.
 */
import type { Settings } from '../settings.ts';
import type { KubeClient } from './client.ts';

export interface SecretName {
  namespace: string;
  name: string;
}

/** The label of the Secrets and ConfigMaps the gateway makes. */
export const MANAGED_BY_CAUSEWAY = { 'app.kubernetes.io/managed-by': 'causeway' } as const;

/** The Secret of the admission webhooks' CA, beside that of their serving certificate. */
export function webhookAuthoritySecret(certificates: SecretName): SecretName {
  return { ...certificates, name: `${certificates.name}-ca` };
}

/**
 * The Secrets the gateway keeps its own keys in, as its settings name them: its signing keys, the CA
 * of the function services' certificates, the admission webhooks' certificate and CA. No one else's
 * material may be written into them.
 */
export function ownSecrets(settings: Pick<Settings, 'signing' | 'calls' | 'admission'>): SecretName[] {
  const { keys } = settings.signing;
  const { certificateAuthority } = settings.calls;
  const webhooks = settings.admission.certificates;
  return [
    ...(keys ? [keys] : []),
    ...(certificateAuthority ? [certificateAuthority] : []),
    ...(webhooks ? [webhooks, webhookAuthoritySecret(webhooks)] : []),
  ];
}

export function secretsPath(namespace: string): string {
  return `/api/v1/namespaces/${encodeURIComponent(namespace)}/secrets`;
}

export function secretPath({ namespace, name }: SecretName): string {
  return `${secretsPath(namespace)}/${encodeURIComponent(name)}`;
}

/**
 * Creates the Secret holding `files` (each base64-encoded), or replaces the version read: a 409 then
 * means another replica wrote first.
 */
export async function writeSecret(
  client: KubeClient,
  secret: SecretName,
  contents: { type: string; files: Record<string, string> },
  resourceVersion: string | undefined,
): Promise<void> {
  const body = {
    apiVersion: 'v1',
    kind: 'Secret',
    type: contents.type,
    metadata: {
      name: secret.name,
      namespace: secret.namespace,
      labels: MANAGED_BY_CAUSEWAY,
      ...(resourceVersion ? { resourceVersion } : {}),
    },
    data: Object.fromEntries(
      Object.entries(contents.files).map(([key, value]) => [key, Buffer.from(value).toString('base64')]),
    ),
  };
  if (resourceVersion) await client.request(secretPath(secret), { method: 'PUT', body });
  else await client.request(secretsPath(secret.namespace), { method: 'POST', body });
}
