/**
 * Liveness of the gateway's connections to the API server. A connection that falls silent without
 * closing (a proxy that stops forwarding, a dead NAT entry, a hung load balancer) fails nothing by
 * itself: requests on it wait, watches on it show nothing, and nothing is logged. So each HTTP/2
 * session to the server is PINGed every `pingIntervalMs`, and one whose acks stop for `pingTimeoutMs`
 * past the interval is taken for dead: it is destroyed with every other connection to the same server,
 * the requests under way fail (transiently: the client retries them on a new connection), and each
 * watch resumes from its last resourceVersion. One warning says so. undici sends the PINGs, but never
 * times one out. Through an HTTP proxy (a kubeconfig's `proxy-url`), each connection is a TLS session
 * with the server inside a CONNECT tunnel, HTTP/2 as a direct one: PINGed and replaced the same way.
 */
import type { EventEmitter } from 'node:events';
import type { Socket } from 'node:net';
import { Agent, type buildConnector, Client, type Dispatcher, Pool, ProxyAgent } from 'undici';
import type { Logger } from '../logging.ts';
import { SilentConnection } from './errors.ts';

export interface LivenessTiming {
  /** How often the HTTP/2 session is PINGed. */
  pingIntervalMs: number;
  /** How long past the interval an ack may be late before the session is taken for dead. */
  pingTimeoutMs: number;
}

/**
 * A silent session is found 15 to 20 s after it fell silent. client-go's takes 45 s at most (30 s
 * without a frame, then a PING unanswered for 15 s); a PING every 5 s costs two frames of 17 bytes.
 */
export const DEFAULT_LIVENESS: LivenessTiming = { pingIntervalMs: 5_000, pingTimeoutMs: 15_000 };

/** A timer this late ran after a long synchronous task: the acks it waited for may be unread yet. */
const LATE_MS = 1_000;

/**
 * Calls `onSilent` (with how long it has been) when `heard` has not been called for `limitMs`. When
 * the event loop itself was held past the deadline, the answers may be waiting unread: it waits
 * `graceMs` more before it calls.
 */
export class Deadline {
  readonly #limitMs: number;
  readonly #graceMs: number;
  readonly #onSilent: (silentMs: number) => void;
  #heardAt = Date.now();
  #timer: NodeJS.Timeout | undefined;

  constructor(limitMs: number, graceMs: number, onSilent: (silentMs: number) => void) {
    this.#limitMs = limitMs;
    this.#graceMs = graceMs;
    this.#onSilent = onSilent;
    this.heard();
  }

  heard(): void {
    this.#heardAt = Date.now();
    this.#arm(this.#limitMs);
  }

  stop(): void {
    clearTimeout(this.#timer);
  }

  #arm(ms: number): void {
    clearTimeout(this.#timer);
    const due = Date.now() + ms;
    this.#timer = setTimeout(() => {
      if (Date.now() - due > LATE_MS) this.#arm(this.#graceMs);
      else this.#onSilent(Date.now() - this.#heardAt);
    }, ms);
    this.#timer.unref();
  }
}

/**
 * How the connections reach the server, as client-node reads a kubeconfig: straight, with these
 * options (TLS material, keep-alive), or through the HTTP proxy at `uri`, which each connection asks
 * for a tunnel (CONNECT) over a connection made with `connect`, for a TLS session made with
 * `requestTls` inside it.
 */
export type Route =
  | { type: 'agent'; connect: buildConnector.BuildOptions }
  | {
      type: 'proxy';
      uri: string;
      requestTls: buildConnector.BuildOptions;
      connect: buildConnector.BuildOptions;
    };

/**
 * The dispatchers of a session to one API server, each with connections of its own: one for
 * requests, one for watches (see sessionOf in client.ts for why), and one for the requests that carry
 * a body (writes). The first two speak HTTP/2 where the server does (the apiserver does), so both are
 * PINGed: the watches' session always has streams open, and is never closed as idle, as the
 * requests' is after a few seconds without one. Writes go over HTTP/1.1: a request stream that sends
 * DATA frames is what Node's HTTP/2 was seen to loop on (see `writes`). When one connection falls
 * silent, every connection to the server is closed, HTTP/1.1 ones too: they take the same path.
 */
export class ApiConnections {
  readonly requests: Dispatcher;
  readonly watches: Dispatcher;
  /**
   * HTTP/1.1, kept alive. Over HTTP/2, Node 24.21 was caught (gdb, in two test processes of a starved
   * machine) looping in native code on a request stream of ours: nghttp2 asked its stream for data,
   * got none and no end, and packed an empty DATA frame (9 bytes: length 0, no flags) again and again,
   * copying each into the session's outgoing buffer. No JavaScript ran again; memory grew by some
   * 100 MB/s until the kernel killed the process (23 GB, twice). A request without a body ends its
   * stream with its headers and sends no DATA frame: reads and watches stay on HTTP/2.
   */
  readonly writes: Dispatcher;
  readonly #server: string;
  readonly #logger: Logger | undefined;
  readonly #timing: LivenessTiming;
  readonly #sockets = new Set<Socket>();

  constructor(
    server: string,
    route: Route,
    logger: Logger | undefined,
    timing: LivenessTiming = DEFAULT_LIVENESS,
  ) {
    this.#server = server;
    this.#logger = logger;
    this.#timing = timing;
    const agent = (allowH2: boolean): Dispatcher => {
      const options = {
        allowH2,
        ...(allowH2 ? { h2Options: { pingInterval: timing.pingIntervalMs } } : {}),
        factory: (origin: string | URL, poolOptions: object) =>
          new Pool(origin, { ...poolOptions, factory: this.#pingedClient }),
      };
      if (route.type === 'agent') return new Agent({ ...options, connect: route.connect });
      // In a tunnel, the TLS session's ALPN alone chooses the protocol: allowH2 does not reach it.
      return new ProxyAgent({
        ...options,
        uri: route.uri,
        proxyTls: route.connect,
        requestTls: { ...route.requestTls, allowH2 },
      });
    };
    this.requests = agent(true);
    this.watches = agent(true);
    this.writes = agent(false);
  }

  /** A client of a pool whose sockets are known, and whose HTTP/2 sessions are given a Deadline, met by each PING's ack. */
  #pingedClient = (origin: string | URL, options: object): Client => {
    const { connect } = options as { connect: buildConnector.connector };
    let socket: Socket | undefined;
    let deadline: Deadline | undefined;
    const client = new Client(origin, {
      ...options,
      connect: (connectOptions, callback) =>
        connect(connectOptions, (error, connected) => {
          socket = connected ?? undefined;
          if (connected) {
            this.#sockets.add(connected);
            connected.once('close', () => this.#sockets.delete(connected));
          }
          (callback as (error: Error | null, socket: Socket | null) => void)(error, connected);
        }),
    });
    client.on('connect', () => {
      const session = socket;
      if (!session || (session as Socket & { alpnProtocol?: string }).alpnProtocol !== 'h2') return;
      deadline?.stop();
      deadline = new Deadline(
        this.#timing.pingIntervalMs + this.#timing.pingTimeoutMs,
        this.#timing.pingTimeoutMs,
        (silentMs) => this.#silent(session, silentMs),
      );
    });
    // undici emits 'ping' for each ack (dispatcher/client-h2.js), though its types do not say so.
    (client as unknown as EventEmitter).on('ping', () => deadline?.heard());
    client.on('disconnect', () => {
      deadline?.stop();
      deadline = undefined;
    });
    return client;
  };

  #silent(session: Socket, silentMs: number): void {
    if (session.destroyed) return; // closed with another that fell silent first
    const seconds = Number((silentMs / 1000).toFixed(1));
    const error = new SilentConnection(
      `the connection to ${this.#server} was silent for ${seconds} s (no answer to PING): closed`,
    );
    const sockets = [...this.#sockets];
    for (const socket of sockets) socket.destroy(error);
    this.#logger?.warning(
      `a connection to the API server fell silent (no answer to PING for ${seconds} s): closed it and ` +
        'the others to the same server; requests under way are retried on new ones, watches resume where they were',
      { server: this.#server, connections: sockets.length },
    );
  }
}
