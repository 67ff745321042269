import { join } from 'node:path';
import { type OnSpawn, supervise } from './processes.ts';
import { untilReady } from './readiness.ts';

/**
 * Starts etcd and waits until it is healthy. `launch` starts it again, after it has been stopped or
 * killed, with the same flags: the same ports and the same data directory.
 */
export async function startEtcd(
  binary: string,
  {
    dir,
    clientPort,
    peerPort,
    onSpawn,
  }: { dir: string; clientPort: number; peerPort: number; onSpawn: OnSpawn },
): Promise<{ url: string; launch(): Promise<void> }> {
  const url = `http://127.0.0.1:${clientPort}`;
  const peerUrl = `http://127.0.0.1:${peerPort}`;
  const args = [
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
  ];
  const launch = async () => {
    const etcd = await supervise('etcd', binary, args, { logPath: join(dir, 'etcd.log') });
    onSpawn(etcd);
    await untilReady(etcd, `etcd at ${url}/health`, async () => {
      const response = await fetch(`${url}/health`).catch(() => undefined);
      return response?.ok ? true : undefined;
    });
  };
  await launch();
  return { url, launch };
}
