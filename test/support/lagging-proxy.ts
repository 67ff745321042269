/**
 * A plain-HTTP reverse proxy to the test apiserver that can hold back watch streams, as a congested
 * network or a busy apiserver does: the apiserver and its events are real, only their delivery lags.
 * Everything else (lists, reads, writes) passes at once, but for Leases when told to refuse them, as
 * an apiserver that one client can no longer reach for them would (503); and it can cut a resource's
 * watches and refuse them for a while, as a network that parts the gateway from the apiserver does;
 * or mute a resource's open watches for good, as a stream that falls silent while its connection
 * lives; or lose the answers of writes that the apiserver carried out, as a load balancer that times
 * out while the apiserver works answers 504 for a write that landed all the same. Plain HTTP/1.1 to the client: each watch has a connection of its own, and none is PINGed.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { request } from 'node:https';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import type { ApiTarget } from '../../deploy/control-plane/https.ts';

export interface LaggingProxy {
  /** A kubeconfig whose cluster is this proxy. */
  kubeConfig(): KubeConfig;
  /** Lets the next object event of the watches through, and holds back every event after it. */
  holdAfterNextEvent(): void;
  /** Delivers what was held back, and holds nothing from now on. */
  release(): void;
  /** Answers every request for Leases with 503 while `refused`. */
  refuseLeases(refused: boolean): void;
  /**
   * Cuts the open watches of paths that contain `resource`, and answers new ones 503, until called
   * with undefined; resolves once a watch has been refused, so that the client is known to be away.
   */
  refuseWatches(resource: string | undefined): Promise<void>;
  /** Resolves once a BOOKMARK of a watch of a path that contains `resource` has passed. */
  nextBookmark(resource: string): Promise<void>;
  /**
   * The open watches of paths that contain `resource` pass nothing more, their end neither, and their
   * connections stay open; watches opened after pass as usual.
   */
  muteWatches(resource: string): void;
  /**
   * The next `count` writes (PATCH, PUT) of paths that contain `path` reach the apiserver, which carries
   * them out, but its answer is replaced by a 504; resolves once `count` were.
   */
  loseAnswersOfWrites(path: string, count: number): Promise<void>;
  /** GETs of paths that end with `path` passed so far. */
  reads(path: string): number;
  close(): Promise<void>;
}

type Valve = 'open' | 'after-next' | 'held';

export async function startLaggingProxy(target: ApiTarget): Promise<LaggingProxy> {
  let valve: Valve = 'open';
  let leasesRefused = false;
  let watchesRefused: string | undefined;
  let watchRefused = Promise.withResolvers<void>();
  /** The open watches' responses, by path. */
  const watches = new Map<ServerResponse, string>();
  /** What the valve keeps: lines, and the end of a stream that ended meanwhile (no data). */
  const held: Array<{ response: ServerResponse; data?: string }> = [];
  /** Watches that pass nothing, for good. */
  const muted = new Set<ServerResponse>();
  /** Who waits for a bookmark, of which resource. */
  const bookmarkWaiters: Array<{ resource: string; passed: () => void }> = [];
  /** Writes whose answers are lost: of which paths, how many still, and who waits for the last. */
  let losing: { path: string; left: number; lost: () => void } | undefined;
  const readPaths: string[] = [];

  /** Forwards a watch's lines as the valve allows; a line is one event. */
  const watchStream = (response: ServerResponse, path: string) => {
    let pending = '';
    return (chunk: Buffer) => {
      pending += chunk.toString();
      for (let newline = pending.indexOf('\n'); newline >= 0; newline = pending.indexOf('\n')) {
        const line = pending.slice(0, newline + 1);
        pending = pending.slice(newline + 1);
        if (muted.has(response)) continue;
        if (/"type":"BOOKMARK"/.test(line)) {
          for (const waiter of bookmarkWaiters.filter(({ resource }) => path.includes(resource))) {
            bookmarkWaiters.splice(bookmarkWaiters.indexOf(waiter), 1);
            waiter.passed();
          }
        }
        if (valve === 'held') held.push({ response, data: line });
        else {
          response.write(line);
          if (valve === 'after-next' && /"type":"(ADDED|MODIFIED|DELETED)"/.test(line)) valve = 'held';
        }
      }
    };
  };

  const forward = (incoming: IncomingMessage, response: ServerResponse) => {
    const url = new URL(incoming.url ?? '/', target.server);
    if (leasesRefused && url.pathname.includes('/leases')) {
      response.writeHead(503, { 'content-type': 'application/json' });
      response.end(
        JSON.stringify({ kind: 'Status', status: 'Failure', code: 503, message: 'refused by the test' }),
      );
      return;
    }
    const watching = ['true', '1'].includes(url.searchParams.get('watch') ?? '');
    if (watching && watchesRefused !== undefined && url.pathname.includes(watchesRefused)) {
      response.writeHead(503, { 'content-type': 'application/json' });
      response.end(
        JSON.stringify({ kind: 'Status', status: 'Failure', code: 503, message: 'refused by the test' }),
      );
      watchRefused.resolve();
      return;
    }
    if (incoming.method === 'GET' && !watching) readPaths.push(url.pathname);
    const losingThis =
      losing !== undefined &&
      ['PATCH', 'PUT'].includes(incoming.method ?? '') &&
      url.pathname.includes(losing.path);
    const { host: _host, ...headers } = incoming.headers;
    const upstream = request(url, { method: incoming.method, headers, ca: target.caPem }, (answer) => {
      if (losingThis && losing) {
        // Carried out; what the apiserver answered is read and dropped.
        answer.resume();
        answer.on('end', () => {
          response.writeHead(504, { 'content-type': 'application/json' });
          response.end(
            JSON.stringify({ kind: 'Status', status: 'Failure', code: 504, message: 'lost by the test' }),
          );
          if (losing && --losing.left === 0) {
            losing.lost();
            losing = undefined;
          }
        });
        return;
      }
      response.writeHead(answer.statusCode ?? 502, answer.headers);
      if (watching) {
        watches.set(response, url.pathname);
        answer.on('data', watchStream(response, url.pathname));
        answer.on('end', () => {
          if (muted.has(response)) return;
          if (valve === 'held') held.push({ response });
          else response.end();
        });
      } else answer.pipe(response);
    });
    upstream.on('error', (error) => response.destroy(error));
    response.on('close', () => {
      watches.delete(response);
      muted.delete(response);
      upstream.destroy();
    });
    incoming.pipe(upstream);
  };

  const server = createServer(forward);
  await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    kubeConfig() {
      const config = new KubeConfig();
      config.loadFromOptions({
        clusters: [{ name: 'lagging', server: url, skipTLSVerify: true }],
        users: [{ name: 'admin', token: target.token }],
        contexts: [{ name: 'lagging', cluster: 'lagging', user: 'admin' }],
        currentContext: 'lagging',
      });
      return config;
    },
    holdAfterNextEvent() {
      valve = 'after-next';
    },
    refuseLeases(refused) {
      leasesRefused = refused;
    },
    async refuseWatches(resource) {
      watchesRefused = resource;
      if (resource === undefined) return;
      watchRefused = Promise.withResolvers<void>();
      for (const [response, path] of watches) if (path.includes(resource)) response.destroy();
      await watchRefused.promise;
    },
    nextBookmark(resource) {
      const { promise, resolve } = Promise.withResolvers<void>();
      bookmarkWaiters.push({ resource, passed: resolve });
      return promise;
    },
    loseAnswersOfWrites(path, count) {
      const { promise, resolve } = Promise.withResolvers<void>();
      losing = { path, left: count, lost: resolve };
      return promise;
    },
    reads(path) {
      return readPaths.filter((read) => read.endsWith(path)).length;
    },
    muteWatches(resource) {
      for (const [response, path] of watches) if (path.includes(resource)) muted.add(response);
    },
    release() {
      valve = 'open';
      for (const { response, data } of held.splice(0)) {
        if (response.writableEnded) continue;
        if (data === undefined) response.end();
        else response.write(data);
      }
    },
    async close() {
      server.closeAllConnections();
      await new Promise((closed) => server.close(closed));
    },
  };
}
