import { X509Certificate } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { serviceAccountKeyPair, tokenAuthLine } from './credentials.ts';
import { type ApiTarget, apiRequest } from './https.ts';
import { type OnSpawn, supervise } from './processes.ts';
import { untilReady } from './readiness.ts';
import { webhookClientCertificate } from './webhook-clients.ts';

export interface KubeApiserverOptions {
  dir: string;
  etcdUrl: string;
  port: number;
  token: string;
  auditLogPath?: string;
  /** Serve watches from etcd directly (--watch-cache=false), so that a compacted position is answered 410; default true. */
  watchCache?: boolean;
  /** Requests served at once, read-only and mutating each (--max-requests-inflight and --max-mutating-requests-inflight); the apiserver's defaults (400, 200) when undefined. */
  requestsInFlight?: number;
  onSpawn: OnSpawn;
}

/**
 * Starts kube-apiserver and waits until it is ready. `launch` starts it again, after it has been
 * stopped or killed, with the same flags: the same port, certificates, keys and tokens.
 */
export async function startKubeApiserver(
  binary: string,
  {
    dir,
    etcdUrl,
    port,
    token,
    auditLogPath,
    watchCache = true,
    requestsInFlight,
    onSpawn,
  }: KubeApiserverOptions,
): Promise<ApiTarget & { webhookClientCaPath: string; launch(): Promise<void> }> {
  const certDir = join(dir, 'certs');
  await mkdir(certDir);
  const tokensPath = join(dir, 'tokens.csv');
  await writeFile(tokensPath, tokenAuthLine(token), { mode: 0o600 });
  const keys = await serviceAccountKeyPair();
  const publicKeyPath = join(dir, 'service-account.pub');
  const privateKeyPath = join(dir, 'service-account.key');
  await writeFile(publicKeyPath, keys.publicPem);
  await writeFile(privateKeyPath, keys.privatePem, { mode: 0o600 });
  const webhookClients = await webhookClientCertificate(dir);

  const args = [
    `--etcd-servers=${etcdUrl}`,
    '--bind-address=127.0.0.1',
    '--advertise-address=127.0.0.1',
    `--secure-port=${port}`,
    // Without --tls-cert-file the apiserver generates a CA and a serving cert for its addresses here,
    // and reuses them when it starts again.
    `--cert-dir=${certDir}`,
    `--token-auth-file=${tokensPath}`,
    '--service-account-issuer=https://kubernetes.default.svc',
    `--service-account-key-file=${publicKeyPath}`,
    `--service-account-signing-key-file=${privateKeyPath}`,
    '--authorization-mode=RBAC',
    // No kubelets and no service network: nothing could serve the kubernetes Service's endpoints,
    // and pods need no service account token volumes.
    '--endpoint-reconciler-type=none',
    '--disable-admission-plugins=ServiceAccount',
    '--service-cluster-ip-range=10.0.0.0/24',
    webhookClients.flag,
    ...(watchCache ? [] : ['--watch-cache=false']),
    ...(requestsInFlight === undefined
      ? []
      : [
          `--max-requests-inflight=${requestsInFlight}`,
          `--max-mutating-requests-inflight=${requestsInFlight}`,
        ]),
    ...(auditLogPath ? await auditFlags(dir, auditLogPath) : []),
  ];
  const certPath = join(certDir, 'apiserver.crt');
  const api = { server: `https://127.0.0.1:${port}`, token, caPem: '' };
  const launch = async () => {
    const apiserver = await supervise('kube-apiserver', binary, args, {
      logPath: join(dir, 'kube-apiserver.log'),
    });
    onSpawn(apiserver);
    api.caPem = await untilReady(apiserver, `${certPath} to be generated`, async () =>
      generatedCa(await readFile(certPath, 'utf8').catch(() => '')),
    );
    let last = '';
    await untilReady(
      apiserver,
      `${api.server}/readyz`,
      async () => {
        const response = await apiRequest(api, 'GET', '/readyz').catch((error: Error) => ({
          status: 0,
          body: error.message,
        }));
        last = `last /readyz answer: ${response.status} ${response.body}`;
        return response.status === 200 ? true : undefined;
      },
      () => last,
    );
  };
  await launch();
  return { ...api, webhookClientCaPath: webhookClients.caPath, launch };
}

/**
 * The generated file holds the serving cert followed by the CA that signed it. Returns undefined while
 * the file is missing or half written.
 */
function generatedCa(bundle: string): string | undefined {
  const blocks = bundle.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----\n?/g) ?? [];
  for (const pem of blocks) {
    try {
      if (new X509Certificate(pem).ca) return pem;
    } catch {
      return undefined;
    }
  }
  return undefined;
}

/** Metadata for writes only: enough to assert who changed what, without reads drowning it. */
async function auditFlags(dir: string, auditLogPath: string): Promise<string[]> {
  const policyPath = join(dir, 'audit-policy.json');
  const policy = {
    apiVersion: 'audit.k8s.io/v1',
    kind: 'Policy',
    omitStages: ['RequestReceived'],
    rules: [
      { level: 'Metadata', verbs: ['create', 'update', 'patch', 'delete', 'deletecollection'] },
      { level: 'None' },
    ],
  };
  await writeFile(policyPath, JSON.stringify(policy));
  return [`--audit-policy-file=${policyPath}`, `--audit-log-path=${auditLogPath}`];
}
