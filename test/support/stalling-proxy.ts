/**
 * A plain TCP proxy on 127.0.0.1 in front of the test apiserver whose connections can go silent
 * without closing, as behind a hung load balancer or a dead NAT entry, or be cut mid-stream. TLS
 * passes through it end to end: the apiserver's certificate (for 127.0.0.1) still verifies, and the
 * gateway's HTTP/2 and HTTP/1.1 connections are its own. Unlike lagging-proxy.ts, it sees no HTTP.
 */
import { connect, createServer, type Socket } from 'node:net';
import type { ApiTarget } from '../../deploy/control-plane/https.ts';

export interface StallingProxy {
  /** The apiserver as reached through the proxy: its token and CA, this proxy's URL. */
  target: ApiTarget;
  /**
   * Existing connections stay open, but nothing passes on them any more, in either direction (each
   * side's writes pile up in its buffers, unread). Connections made after it pass as usual.
   */
  stall(): void;
  /** Existing connections are reset, both sides, whatever is under way on them. */
  cut(): void;
  close(): Promise<void>;
}

interface Connection {
  client: Socket;
  upstream: Socket;
}

export async function startStallingProxy(target: ApiTarget): Promise<StallingProxy> {
  const upstreamUrl = new URL(target.server);
  const open = new Set<Connection>();

  const server = createServer((client) => {
    const upstream = connect(Number(upstreamUrl.port), upstreamUrl.hostname);
    const connection = { client, upstream };
    open.add(connection);
    client.pipe(upstream);
    upstream.pipe(client);
    const end = () => {
      open.delete(connection);
      client.destroy();
      upstream.destroy();
    };
    for (const socket of [client, upstream]) socket.on('error', end).on('close', end);
  });
  await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
  const { port } = server.address() as { port: number };

  return {
    target: { ...target, server: `https://127.0.0.1:${port}` },
    stall() {
      for (const { client, upstream } of open) {
        client.unpipe(upstream);
        upstream.unpipe(client);
        client.pause();
        upstream.pause();
      }
    },
    cut() {
      for (const { client, upstream } of open) {
        client.resetAndDestroy();
        upstream.resetAndDestroy();
      }
    },
    async close() {
      for (const { client, upstream } of open) {
        client.destroy();
        upstream.destroy();
      }
      await new Promise((closed) => server.close(closed));
    },
  };
}
