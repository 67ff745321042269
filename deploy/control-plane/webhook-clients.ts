/**
 * The apiserver's client certificate for admission webhooks, as a cluster admin gives one: a CA of its
 * own signs it, and the apiserver presents it to every webhook (AdmissionConfiguration's kubeconfig,
 * user "*"), so a webhook server can answer only clients that CA vouches for (`--webhook-client-ca`).
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { generate } from 'selfsigned';

const DAY_MS = 86_400_000;

/**
 * Writes the CA's certificate, the kubeconfig and the admission configuration in `dir`: the apiserver's
 * flag that reads them, and where the CA is.
 */
export async function webhookClientCertificate(dir: string): Promise<{ flag: string; caPath: string }> {
  const now = Date.now();
  const validity = {
    keyType: 'ec' as const,
    curve: 'P-256' as const,
    algorithm: 'sha256' as const,
    notBeforeDate: new Date(now - 5 * 60_000),
    notAfterDate: new Date(now + 30 * DAY_MS),
  };
  const ca = await generate([{ name: 'commonName', value: 'webhook clients CA' }], {
    ...validity,
    extensions: [
      { name: 'basicConstraints', cA: true, pathLenConstraint: 0, critical: true },
      { name: 'keyUsage', keyCertSign: true, digitalSignature: true, critical: true },
    ],
  });
  const client = await generate([{ name: 'commonName', value: 'kube-apiserver' }], {
    ...validity,
    ca: { key: ca.private, cert: ca.cert },
    extensions: [
      { name: 'basicConstraints', cA: false },
      { name: 'keyUsage', digitalSignature: true, critical: true },
      { name: 'extKeyUsage', clientAuth: true },
    ],
  });
  const base64 = (pem: string) => Buffer.from(pem).toString('base64');
  const kubeconfigPath = join(dir, 'webhook-clients.kubeconfig');
  const kubeconfig = {
    apiVersion: 'v1',
    kind: 'Config',
    // "*": whatever the webhook's host. A server that asks for no certificate is sent none.
    users: [
      {
        name: '*',
        user: { 'client-certificate-data': base64(client.cert), 'client-key-data': base64(client.private) },
      },
    ],
  };
  await writeFile(kubeconfigPath, JSON.stringify(kubeconfig), { mode: 0o600 });
  const configuration = {
    apiVersion: 'apiserver.config.k8s.io/v1',
    kind: 'WebhookAdmissionConfiguration',
    kubeConfigFile: kubeconfigPath,
  };
  const admissionPath = join(dir, 'admission-configuration.json');
  await writeFile(
    admissionPath,
    JSON.stringify({
      apiVersion: 'apiserver.config.k8s.io/v1',
      kind: 'AdmissionConfiguration',
      plugins: ['ValidatingAdmissionWebhook', 'MutatingAdmissionWebhook'].map((name) => ({
        name,
        configuration,
      })),
    }),
  );
  const caPath = join(dir, 'webhook-client-ca.crt');
  await writeFile(caPath, ca.cert);
  return { flag: `--admission-control-config-file=${admissionPath}`, caPath };
}
