import { readFile, writeFile } from 'node:fs/promises';
import type { ApiTarget } from './https.ts';

interface Kubeconfig {
  apiVersion: 'v1';
  kind: 'Config';
  'current-context': string;
  contexts: { name: string; context: { cluster: string; user: string } }[];
  clusters: {
    name: string;
    cluster: { server: string; 'certificate-authority-data': string; 'proxy-url'?: string };
  }[];
  users: { name: string; user: { token: string } }[];
}

const NAME = 'causeway';

/**
 * Written as JSON, which kubectl and client libraries read like YAML, so that reading it back needs no
 * YAML parser. The CA is embedded so the file stays valid when copied elsewhere. With a `proxyUrl`,
 * clients reach the server through that HTTP proxy (CONNECT).
 */
export async function writeKubeconfig(
  path: string,
  { server, token, caPem, proxyUrl }: ApiTarget & { proxyUrl?: string | undefined },
): Promise<void> {
  const config: Kubeconfig = {
    apiVersion: 'v1',
    kind: 'Config',
    'current-context': NAME,
    contexts: [{ name: NAME, context: { cluster: NAME, user: NAME } }],
    clusters: [
      {
        name: NAME,
        cluster: {
          server,
          'certificate-authority-data': Buffer.from(caPem).toString('base64'),
          ...(proxyUrl ? { 'proxy-url': proxyUrl } : {}),
        },
      },
    ],
    users: [{ name: NAME, user: { token } }],
  };
  // Mode 0600: it holds an admin token.
  await writeFile(path, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
}

/** Reads a kubeconfig written by writeKubeconfig. */
export async function readKubeconfig(path: string): Promise<ApiTarget> {
  const config = JSON.parse(await readFile(path, 'utf8')) as Kubeconfig;
  const named = <T extends { name: string }>(list: T[], name: string): T => {
    const entry = list.find((item) => item.name === name);
    if (!entry) throw new Error(`${path}: nothing named ${name}`);
    return entry;
  };
  const { context } = named(config.contexts, config['current-context']);
  const { cluster } = named(config.clusters, context.cluster);
  const { user } = named(config.users, context.user);
  return {
    server: cluster.server,
    caPem: Buffer.from(cluster['certificate-authority-data'], 'base64').toString(),
    token: user.token,
  };
}
