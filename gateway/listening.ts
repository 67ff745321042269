/** Starting and stopping the gateway's own plain HTTP servers (liveness, metrics) alike. */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** `http://host:port` of a server meant for `address`, its port known once it listens (0 takes any). */
export function origin(server: Server | undefined, address: { host: string; port: number }): string {
  const port = (server?.address() as AddressInfo | null)?.port ?? address.port;
  const { host } = address;
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
}

/** Resolves once `server` listens on `host`:`port`; rejects with why it could not. */
export function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

/** Stops listening and closes every connection now, idle or not: a probe or a scrape can be asked again. */
export function closeNow(server: Server): Promise<void> {
  return new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}
