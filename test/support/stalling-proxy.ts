/**
 * A plain TCP proxy on 127.0.0.1 in front of the test apiserver whose connections can go silent
 * without closing, as behind a hung load balancer or a dead NAT entry, or be cut mid-stream. TLS
 * passes through it end to end: the apiserver's certificate (for 127.0.0.1) still verifies, and the
 * gateway's HTTP/2 and HTTP/1.1 connections are its own. Unlike lagging-proxy.ts, it sees no HTTP;
 * as an HTTP proxy (`tunnel`), only each connection's CONNECT, as a kubeconfig's `proxy-url` makes
 * clients send one.
 */
import { connect, createServer, type Socket } from 'node:net';
import type { ApiTarget } from '../../deploy/control-plane/https.ts';

export interface StallingProxy {
  /**
   * The apiserver as reached through the proxy: its token and CA, and this proxy's URL as its server;
   * as an HTTP proxy, the apiserver's own URL, with this proxy's as `proxyUrl`.
   */
  target: ApiTarget & { proxyUrl?: string };
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

/** The end of an HTTP request's head. */
const HEAD_END = '\r\n\r\n';

export async function startStallingProxy(
  target: ApiTarget,
  { tunnel = false }: { tunnel?: boolean } = {},
): Promise<StallingProxy> {
  const upstreamUrl = new URL(target.server);
  const apiserver = `${upstreamUrl.hostname}:${upstreamUrl.port}`;
  const open = new Set<Connection>();

  /** Passes bytes both ways between `client` and the apiserver, `first` (read past a CONNECT's head) first. */
  const relay = (client: Socket, first?: Buffer) => {
    const upstream = connect(Number(upstreamUrl.port), upstreamUrl.hostname);
    const connection = { client, upstream };
    open.add(connection);
    if (first && first.length > 0) upstream.write(first);
    client.pipe(upstream);
    upstream.pipe(client);
    const end = () => {
      open.delete(connection);
      client.destroy();
      upstream.destroy();
    };
    for (const socket of [client, upstream]) socket.on('error', end).on('close', end);
    return upstream;
  };

  /** Reads a CONNECT to the apiserver (anything else is refused), answers it, then relays. */
  const tunnelled = (client: Socket) => {
    let head = Buffer.alloc(0);
    client.on('error', () => client.destroy());
    const onData = (chunk: Buffer) => {
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf(HEAD_END);
      if (end < 0) return;
      client.off('data', onData);
      client.pause();
      const [method, authority] = head.subarray(0, end).toString('latin1').split(' ');
      if (method !== 'CONNECT' || authority !== apiserver) {
        client.end('HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\n\r\n');
        return;
      }
      relay(client, head.subarray(end + HEAD_END.length)).once('connect', () =>
        client.write('HTTP/1.1 200 Connection Established\r\n\r\n'),
      );
    };
    client.on('data', onData);
  };

  const server = createServer((client) => (tunnel ? tunnelled(client) : relay(client)));
  await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
  const { port } = server.address() as { port: number };
  const url = `http://127.0.0.1:${port}`;

  return {
    target: tunnel ? { ...target, proxyUrl: url } : { ...target, server: url.replace('http:', 'https:') },
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
