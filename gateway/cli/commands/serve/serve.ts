/** The Node server adapter for function services: the SDK itself stays free of Node built-ins. */
import { createServer, type Server } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { serve } from '@hono/node-server';
import { readCertificateFiles } from '../../../../webhooks/certificates.ts';
import type { FetchHandler } from '../../../dispatch/transport.ts';
import type { Logger } from '../../../logging.ts';

export interface RunningServer {
  url: string;
  close(): Promise<void>;
}

export interface ServeOptions {
  port: number;
  host: string;
  /**
   * Files of a PEM certificate and its key: HTTPS when given, plain HTTP otherwise. Read again when
   * they change (a mounted Secret the gateway renews), looked at every `checkIntervalMs` (10 s).
   */
  tls?: { certFile: string; keyFile: string; checkIntervalMs?: number };
  /** Says when the certificate is read again, or could not be. */
  logger?: Pick<Logger, 'info' | 'warning'>;
}

export async function serveFetch(handler: FetchHandler, options: ServeOptions): Promise<RunningServer> {
  const files = options.tls && { cert: options.tls.certFile, key: options.tls.keyFile };
  const loaded = files && (await readCertificateFiles(files));
  const server = serve({
    fetch: (request) => handler.fetch(request),
    port: options.port,
    hostname: options.host,
    ...(loaded ? { createServer, serverOptions: { cert: loaded.cert, key: loaded.key } } : {}),
  });
  // Every connection, from its first byte: closeAllConnections knows only those past their TLS
  // handshake, and one still in it would keep the server open for as long as the handshake may take.
  const sockets = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  let watching: NodeJS.Timeout | undefined;
  let closed = false;
  if (files && loaded) {
    // A renewal is served from the next connection on, without a restart.
    let stamp = loaded.stamp;
    const schedule = () => {
      if (closed) return;
      watching = setTimeout(look, options.tls?.checkIntervalMs ?? 10_000);
      watching.unref();
    };
    const look = async () => {
      try {
        const read = await readCertificateFiles(files);
        if (read.stamp !== stamp) {
          (server as Server).setSecureContext({ cert: read.cert, key: read.key });
          stamp = read.stamp;
          options.logger?.info(`serving the certificate read again from ${files.cert}`);
        }
      } catch (error) {
        // A renewal caught half-written: the next look finds it whole.
        options.logger?.warning(`reading the certificate files failed: ${(error as Error).message}`);
      }
      schedule();
    };
    schedule();
  }
  const { port } = server.address() as AddressInfo;
  const host = options.host === '0.0.0.0' || options.host === '::' ? '127.0.0.1' : options.host;
  return {
    url: `${loaded ? 'https' : 'http'}://${host.includes(':') ? `[${host}]` : host}:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        closed = true;
        clearTimeout(watching);
        server.close(() => resolve());
        for (const socket of sockets) socket.destroy();
      }),
  };
}
