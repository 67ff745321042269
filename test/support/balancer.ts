/**
 * A TCP load balancer on loopback, in the role a Service plays in a cluster: each connection goes to
 * one of the backends in it at that moment (in turn), and stays with that backend for its life. A
 * backend taken out gets no new connections while those it has go on, as kube-proxy does with an
 * endpoint removed. It forwards bytes only: TLS is between the client and the backend.
 */
import { type AddressInfo, connect, createServer, type Socket } from 'node:net';

export interface Balancer {
  /** `https://127.0.0.1:<port>`: what clients are to call. */
  readonly url: string;
  /** Sends new connections to the server at this loopback port too (an endpoint ready). */
  add(port: number): void;
  /** Sends no new connection there (an endpoint removed); those it has stay. */
  remove(port: number): void;
  close(): Promise<void>;
}

export async function startBalancer(): Promise<Balancer> {
  let backends: number[] = [];
  const open = new Set<Socket>();
  let turn = 0;
  const server = createServer((client) => {
    const port = backends[turn++ % backends.length];
    if (port === undefined) return void client.destroy(); // no endpoint: refused, as by a Service without one
    const backend = connect({ host: '127.0.0.1', port });
    // An end goes through as an end (pipe), so a reply is never cut; a broken one breaks the other.
    for (const [socket, other] of [
      [client, backend],
      [backend, client],
    ] as const) {
      open.add(socket);
      socket.once('close', () => open.delete(socket));
      socket.on('error', () => other.destroy());
      socket.pipe(other);
    }
  });
  await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
  return {
    url: `https://127.0.0.1:${(server.address() as AddressInfo).port}`,
    add: (port) => {
      backends = [...backends, port];
    },
    remove: (port) => {
      backends = backends.filter((other) => other !== port);
    },
    close: () =>
      new Promise<void>((closed) => {
        server.close(() => closed());
        for (const socket of open) socket.destroy();
      }),
  };
}
