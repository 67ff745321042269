/** The Node server adapter for function services: the SDK itself stays free of Node built-ins. */
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import type { FetchHandler } from '../dispatch/transport.ts';

export interface RunningServer {
  url: string;
  close(): Promise<void>;
}

export interface ServeOptions {
  port: number;
  host: string;
  /** PEM certificate and key: HTTPS when given, plain HTTP otherwise. */
  tls?: { cert: string; key: string };
}

export async function serveFetch(handler: FetchHandler, options: ServeOptions): Promise<RunningServer> {
  const server = serve({
    fetch: (request) => handler.fetch(request),
    port: options.port,
    hostname: options.host,
    ...(options.tls ? { createServer, serverOptions: { cert: options.tls.cert, key: options.tls.key } } : {}),
  });
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  const { port } = server.address() as AddressInfo;
  const host = options.host === '0.0.0.0' || options.host === '::' ? '127.0.0.1' : options.host;
  return {
    url: `${options.tls ? 'https' : 'http'}://${host.includes(':') ? `[${host}]` : host}:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        if ('closeAllConnections' in server) server.closeAllConnections();
      }),
  };
}
