/**
 * A function service that fails as real ones do: an HTTP proxy in front of a real one (an operator
 * served by `causeway serve` or serveFetch) that answers a share of its invocations with a fault, the
 * kinds in turn, and passes the rest through untouched (signed by the gateway, verified by the
 * service). A proxy rather than a rewrite of answers (hostile-service.ts): a closed connection and a
 * truncated body are made on the socket, which a fetch handler cannot reach. It records every
 * invocation (when, which objects and handlers, which fault) and health check, and can go down (every
 * connection closed at once, health checks too) and come back.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { PATHS, PROTOCOL } from '../../protocol/index.ts';

/** What a faulty answer is, in the order they come. */
export const FAULTS = [
  'error 500',
  'timeout', // no answer: the gateway's deadline ends the call
  'closed connection',
  'truncated body',
  'not JSON',
  'wrong schema',
] as const;
export type Fault = (typeof FAULTS)[number];

/** A handler due in an invocation, as the gateway sent it. */
export interface SentHandler {
  id: string;
  retry: number;
  idempotencyKey: string;
}

export interface RecordedInvocation {
  /** Date.now() when it arrived. */
  at: number;
  /** Date.now() when its answer was sent or its connection closed: its end, as the gateway sees it. */
  endedAt?: number;
  /** The objects it calls handlers of (one per call of a batch), by name, with their handlers. */
  calls: Array<{ object: string; handlers: SentHandler[] }>;
  /** How it was answered, when not as the service answered: a fault, or closed while down. */
  fault: Fault | 'down' | undefined;
}

export interface FaultyService {
  /** The URL to give the gateway. */
  url: string;
  invocations: RecordedInvocation[];
  /** Date.now() of each health check that arrived (answered or not). */
  healthChecks: number[];
  /** Every connection closed as it comes (down) or passed on again (up). */
  setDown(down: boolean): void;
  close(): Promise<void>;
}

/**
 * A proxy to the function service at `target` answering `faultShare` of its invocations (spread evenly:
 * the nth is faulty when n × share reaches a new integer) with the next fault of FAULTS.
 */
export async function startFaultyService(target: string, faultShare = 0): Promise<FaultyService> {
  const invocations: RecordedInvocation[] = [];
  const healthChecks: number[] = [];
  const sockets = new Set<Socket>();
  let down = false;
  let faults = 0;

  let invocationsWhileUp = 0;
  const nextFault = (): Fault | undefined => {
    const count = ++invocationsWhileUp;
    if (Math.floor(count * faultShare) === Math.floor((count - 1) * faultShare)) return undefined;
    return FAULTS[faults++ % FAULTS.length];
  };

  const serve = async (incoming: IncomingMessage, response: ServerResponse) => {
    const path = new URL(incoming.url ?? '/', 'http://proxy').pathname;
    const at = Date.now();
    if (path === PATHS.health) healthChecks.push(at);
    const invoke = path === PATHS.invoke && incoming.method === 'POST';
    if (down && !invoke) return void incoming.socket.destroy();
    const chunks: Buffer[] = [];
    for await (const chunk of incoming) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    const fault = down ? 'down' : invoke ? nextFault() : undefined;
    if (invoke) {
      const invocation: RecordedInvocation = { at, calls: callsIn(JSON.parse(body.toString())), fault };
      invocations.push(invocation);
      response.once('close', () => {
        invocation.endedAt = Date.now();
      });
    }
    if (fault === 'down') return void incoming.socket.destroy();
    if (fault === 'timeout') return; // held until the gateway gives up and closes the connection
    if (fault === 'closed connection') return void incoming.socket.destroy();
    let answer: Response;
    try {
      answer = await fetch(`${target}${incoming.url}`, {
        method: incoming.method ?? 'GET',
        headers: forwardedHeaders(incoming),
        ...(incoming.method === 'POST' ? { body } : {}),
      });
    } catch {
      return void incoming.socket.destroy(); // the service is gone: so is the gateway's connection
    }
    const text = await answer.text();
    const json = { 'content-type': 'application/json' };
    switch (fault) {
      case undefined:
        response.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? '' });
        return void response.end(text);
      case 'error 500':
        response.writeHead(500, json);
        return void response.end(JSON.stringify({ protocol: PROTOCOL, error: 'injected: internal error' }));
      case 'truncated body':
        response.writeHead(200, { ...json, 'content-length': String(Buffer.byteLength(text)) });
        response.write(text.slice(0, text.length / 2));
        return void incoming.socket.destroy();
      case 'not JSON':
        response.writeHead(200, { 'content-type': 'text/html' });
        return void response.end('<html><body>upstream hiccup</body></html>');
      case 'wrong schema':
        response.writeHead(200, json);
        return void response.end(JSON.stringify(wrongSchema(JSON.parse(text))));
    }
  };

  const server = createServer((incoming, response) => void serve(incoming, response));
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    invocations,
    healthChecks,
    setDown(value) {
      down = value;
      if (down) for (const socket of sockets) socket.destroy();
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise((closed) => server.close(closed));
    },
  };
}

/** An invocation's calls (a batch has several), by object name. */
function callsIn(request: Record<string, unknown>): RecordedInvocation['calls'] {
  const calls = (request.batch as Array<Record<string, unknown>> | undefined) ?? [request];
  return calls.map((call) => ({
    object: (call.body as { metadata: { name: string } }).metadata.name,
    handlers: (call.handlers as SentHandler[]).map(({ id, retry, idempotencyKey }) => ({
      id,
      retry,
      idempotencyKey,
    })),
  }));
}

/** The honest answer with its outcomes as a list instead of a map by handler id (a batch's each). */
function wrongSchema(answer: Record<string, unknown>): unknown {
  const listed = (one: Record<string, unknown>) => ({
    ...one,
    outcomes: Object.values((one.outcomes as object | undefined) ?? {}),
  });
  return Array.isArray(answer.batch) ? { ...answer, batch: answer.batch.map(listed) } : listed(answer);
}

/** The request's headers but those of its own connection. */
function forwardedHeaders(incoming: IncomingMessage): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(incoming.headers)) {
    if (['host', 'connection', 'content-length', 'transfer-encoding', 'keep-alive'].includes(name)) continue;
    if (typeof value === 'string') headers.set(name, value);
  }
  return headers;
}
