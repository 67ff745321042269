/**
 * An HTTP server that handlers call to say they have begun (test/support/daemon-operator.ts does at
 * the start of each daemon round): how a test knows a call is open in a function service that runs
 * elsewhere (another process, workerd), whose own output it does not read.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Beacon {
  /** Where handlers call: `GET <url>?<what happened>`. */
  url: string;
  /** The query strings of the calls so far, in order, e.g. `name=kex&round=2`. */
  hits: string[];
  close(): Promise<void>;
}

export async function startBeacon(): Promise<Beacon> {
  const hits: string[] = [];
  const server = createServer((request, response) => {
    hits.push(new URL(request.url ?? '/', 'http://beacon').searchParams.toString());
    response.end('ok');
  });
  await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/`,
    hits,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
