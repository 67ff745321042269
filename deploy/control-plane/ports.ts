import { createServer, type Server } from 'node:net';
import { waitFor } from './wait.ts';

/** Distinct free loopback ports: all listeners stay open until every port is known. */
export async function freePorts(count: number): Promise<number[]> {
  const servers: Server[] = [];
  try {
    const ports: number[] = [];
    for (let i = 0; i < count; i++) {
      const server = createServer();
      servers.push(server);
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(0, '127.0.0.1', resolve);
      });
      const address = server.address();
      if (address === null || typeof address === 'string') throw new Error('listener has no TCP port');
      ports.push(address.port);
    }
    return ports;
  } finally {
    await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  }
}

/**
 * Resolves once every port can be listened on again on loopback. A component killed with SIGKILL
 * holds its listeners until the kernel has torn it down, which may end after its supervisor's exit
 * was reported: a restart on the same port before then fails with EADDRINUSE.
 */
export async function untilPortsFree(ports: number[], timeoutMs = 10_000): Promise<void> {
  for (const port of ports) {
    await waitFor(`127.0.0.1:${port} to be free`, () => listenable(port), { timeoutMs, intervalMs: 20 });
  }
}

/** true when a listener on the port could be opened (it is closed again at once), undefined while in use. */
async function listenable(port: number): Promise<true | undefined> {
  const server = createServer();
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', resolve);
    });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE') return undefined;
    throw error;
  }
  await new Promise((resolve) => server.close(resolve));
  return true;
}
