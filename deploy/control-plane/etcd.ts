import { join } from 'node:path';
import { type OnSpawn, supervise } from './processes.ts';
import { untilReady } from './readiness.ts';

export async function startEtcd(
  binary: string,
  {
    dir,
    clientPort,
    peerPort,
    onSpawn,
  }: { dir: string; clientPort: number; peerPort: number; onSpawn: OnSpawn },
): Promise<{ url: string }> {
  const url = `http://127.0.0.1:${clientPort}`;
  const peerUrl = `http://127.0.0.1:${peerPort}`;
  const etcd = await supervise(
    'etcd',
    binary,
    [
      '--name=causeway',
      `--data-dir=${join(dir, 'etcd')}`,
      `--listen-client-urls=${url}`,
      `--advertise-client-urls=${url}`,
      `--listen-peer-urls=${peerUrl}`,
      `--initial-advertise-peer-urls=${peerUrl}`,
      `--initial-cluster=causeway=${peerUrl}`,
      // The data is thrown away at stop; fsync would only slow every write down.
      '--unsafe-no-fsync',
      '--log-level=error',
    ],
    { logPath: join(dir, 'etcd.log') },
  );
  onSpawn(etcd);
  await untilReady(etcd, `etcd at ${url}/health`, async () => {
    const response = await fetch(`${url}/health`).catch(() => undefined);
    return response?.ok ? true : undefined;
  });
  return { url };
}
