/**
 * The admission webhook server: HTTPS only (Node's https with Hono), one path per webhook. It parses
 * the AdmissionReview, asks a decision callback for the verdict and answers the review; it knows
 * nothing of handlers or gateways, so it runs alone in its tests. A body limit (the connection is
 * closed past it), a budget of the bytes of all the bodies it holds at once, a cap on connections and
 * on headers, 30 s to send a request, a deadline below the webhook's own timeout, and a 400 with the
 * reason for a malformed review: never a crash, nor a gateway run out of memory by many clients.
 */

import type { IncomingMessage } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { getRequestListener, type HttpBindings } from '@hono/node-server';
import { type Context, Hono } from 'hono';
import { MalformedReview, parseReview, type ReviewRequest, reviewResponse, type Verdict } from './review.ts';

/**
 * Decides about one review for the webhook at `webhook` (the request's path);
 * `signal` ends at the deadline.
 */
export type Decide = (review: ReviewRequest, webhook: string, signal: AbortSignal) => Promise<Verdict>;

export interface WebhookLogger {
  warning(message: string): void;
  error(message: string): void;
}

export interface WebhookServerOptions {
  /** Where to listen: 127.0.0.1 for an apiserver on this host, 0.0.0.0 in a pod. */
  host: string;
  /** 0 for any free port. */
  port: number;
  key: string;
  cert: string;
  decide: Decide;
  /** How long a decision may take; the apiserver gives up at the webhook's timeoutSeconds. */
  deadlineMs(webhook: string): number;
  logger: WebhookLogger;
  /** Biggest review accepted: the object and the old one, each up to etcd's 1.5 MiB, and the rest. */
  bodyLimitBytes?: number;
  /** PEM of a CA: only clients with a certificate it signed (the apiserver's) are answered. */
  clientCa?: string;
  /** How long a client may take to send a whole request, headers and body (a slow client holds a socket). */
  requestTimeoutMs?: number;
  /**
   * The bytes of request bodies held at once, all connections together: a review that would take more
   * is answered 503 and its connection closed, so many large bodies on many connections cannot run
   * the gateway out of memory. At least bodyLimitBytes.
   */
  bodyBudgetBytes?: number;
  /** Connections open at once; those past it are closed as they come (the apiserver keeps a few). */
  maxConnections?: number;
  /** Told of every POST answered: its path, its status, and how long it took (the metrics'). */
  observe?: (path: string, status: number, tookMs: number) => void;
}

export interface WebhookServer {
  /** `https://host:port`, as listened on. */
  readonly url: string;
  readonly port: number;
  /** Serves with another certificate from the next connection on (a renewal), without a restart. */
  setCertificate(key: string, cert: string): void;
  /**
   * Stops listening, and closes every connection once no review is being answered. With `drainMs`,
   * first hands its clients over, until their connections are gone or for that long at most: it
   * answers on (new connections too: a Service learns of a stop late), and every answer closes its
   * connection (`Connection: close`), so a client sends its next review on a new one, which a Service
   * gives another replica, and never on one as it closes; connections left idle go at Node's
   * keep-alive timeout (5 s). A connection closed between two reviews loses the second.
   */
  close(options?: { drainMs?: number }): Promise<void>;
}

const DEFAULT_BODY_LIMIT = 4 * 1024 * 1024;
/** Eight reviews of the largest size at once; thousands of the usual few kilobytes. */
const DEFAULT_BODY_BUDGET = 8 * DEFAULT_BODY_LIMIT;
/** Far more than the apiserver's replicas keep open, far fewer than the file descriptors a pod has. */
const DEFAULT_MAX_CONNECTIONS = 256;
/** The apiserver's headers are a few hundred bytes: half of Node's default (16 KiB) is room to spare. */
const MAX_HEADER_BYTES = 8 * 1024;
/** The apiserver sends a review at once; Node's default (300 s) lets a slow client hold sockets for long. */
const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;
/** A TLS handshake not done by then is dropped (Node's default is 120 s). */
const HANDSHAKE_TIMEOUT_MS = 10_000;

/** The bytes of request bodies held now, against the most that may be, shared by every connection. */
class BodyBudget {
  readonly limit: number;
  #held = 0;

  constructor(limit: number) {
    this.limit = limit;
  }

  /** Takes `bytes` from the budget; false, taking none, when that would go over it. */
  take(bytes: number): boolean {
    if (this.#held + bytes > this.limit) return false;
    this.#held += bytes;
    return true;
  }

  give(bytes: number): void {
    this.#held -= bytes;
  }
}

function webhookApp(
  options: Pick<
    WebhookServerOptions,
    'decide' | 'deadlineMs' | 'logger' | 'bodyLimitBytes' | 'bodyBudgetBytes' | 'observe'
  >,
) {
  const limit = options.bodyLimitBytes ?? DEFAULT_BODY_LIMIT;
  const budget = new BodyBudget(Math.max(options.bodyBudgetBytes ?? DEFAULT_BODY_BUDGET, limit));
  // Served by Node's https server only (startWebhookServer), which gives every request its `incoming`.
  const app = new Hono<{ Bindings: HttpBindings }>();
  const { observe } = options;
  if (observe) {
    app.post('*', async (c, next) => {
      const started = performance.now();
      await next();
      observe(c.req.path, c.res.status, performance.now() - started);
    });
  }
  app.post('*', async (c) => {
    const read = await readBody(c.env.incoming, limit, budget);
    try {
      return await answer(c, read);
    } finally {
      budget.give(read.held); // the body, its JSON and the review are done with
    }
  });
  // Answered with `c.json`, whose Response @hono/node-server writes out at once; the global
  // `Response.json` makes one it must read back as a stream (some 10% of a review's time).
  const answer = async (c: Context, read: Body): Promise<Response> => {
    const url = c.req.url;
    if (read.text === undefined) {
      // Closed once answered: Node would otherwise read whatever the client keeps sending, to reuse the connection.
      if (read.overBudget) {
        options.logger.warning(
          `webhook ${new URL(url).pathname}: refused a review: the server holds ${budget.limit} bytes of reviews at most, and is full`,
        );
        return c.json({ error: 'the webhook server holds too many reviews at once: try again' }, 503, {
          connection: 'close',
          'retry-after': '1',
        });
      }
      return c.json({ error: `the review is larger than ${limit} bytes` }, 413, { connection: 'close' });
    }
    const body = read.text;
    const webhook = new URL(url).pathname;
    let review: ReviewRequest;
    try {
      review = parseReview(JSON.parse(body));
    } catch (error) {
      const reason =
        error instanceof MalformedReview
          ? error.message
          : `the body is not JSON: ${(error as Error).message}`;
      options.logger.warning(`webhook ${webhook}: refused a malformed review: ${reason}`);
      return c.json({ error: reason }, 400);
    }
    const expiry = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        reject(new Error('no decision before the deadline')); // first: a decision the abort hurries comes too late
        expiry.abort();
      }, options.deadlineMs(webhook));
    });
    try {
      const verdict = await Promise.race([options.decide(review, webhook, expiry.signal), deadline]);
      return c.json(reviewResponse(review.uid, verdict));
    } catch (error) {
      // The apiserver then applies the webhook's failure policy.
      const message = error instanceof Error ? error.message : String(error);
      options.logger.error(`webhook ${webhook}: review ${review.uid} failed: ${message}`);
      return c.json({ error: message }, 500);
    } finally {
      clearTimeout(timer); // a decided review keeps no timer
    }
  };
  app.all('*', (c) => c.json({ error: 'admission reviews are POSTed' }, 405));
  // What no route answers (a client gone before its review came whole): said in the log, not printed
  // to stderr as Hono's default does.
  app.onError((error, c) => {
    options.logger.warning(`webhook ${c.req.path}: ${error.message}`);
    return c.json({ error: error.message }, 500);
  });
  return app;
}

export async function startWebhookServer(options: WebhookServerOptions): Promise<WebhookServer> {
  const app = webhookApp(options);
  const answer = getRequestListener(app.fetch);
  const requestTimeout = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
  /** Reviews being answered now; once closing, the connections go when the last is answered. */
  let answering = 0;
  let closing: (() => void) | undefined;
  /** Client connections open now: a drain ends when the last has gone. */
  const connections = new Set<Socket>();
  /** Set while draining: ends the drain. */
  let drained: (() => void) | undefined;
  const server: Server = createServer(
    {
      key: options.key,
      cert: options.cert,
      requestTimeout,
      headersTimeout: requestTimeout,
      maxHeaderSize: MAX_HEADER_BYTES,
      // Node looks for requests over their time this often (30 s by default, which would double it).
      connectionsCheckingInterval: Math.min(1000, requestTimeout / 4),
      handshakeTimeout: Math.min(HANDSHAKE_TIMEOUT_MS, requestTimeout),
      ...(options.clientCa ? { ca: options.clientCa, requestCert: true, rejectUnauthorized: true } : {}),
    },
    (request, response) => {
      if (drained) response.setHeader('connection', 'close');
      answering++;
      response.once('close', () => {
        answering--;
        if (answering === 0) closing?.();
      });
      return answer(request, response);
    },
  );
  // A client refused (no certificate, or one the client CA did not sign), or a handshake cut short:
  // what is left to see of someone other than the apiserver knocking. OpenSSL's reason, not its
  // message of library, function and source line.
  server.on('tlsClientError', (error: Error & { reason?: string }, socket) => {
    const from = socket.remoteAddress ? ` from ${socket.remoteAddress}` : '';
    options.logger.warning(
      `webhook server: refused a TLS connection${from}: ${error.reason ?? error.message}`,
    );
  });
  server.maxConnections = options.maxConnections ?? DEFAULT_MAX_CONNECTIONS;
  // A connection past the cap is closed before its handshake: said once a minute at most.
  let lastDropWarning = 0;
  server.on('drop', () => {
    if (Date.now() - lastDropWarning < 60_000) return;
    lastDropWarning = Date.now();
    options.logger.warning(
      `webhook server: closed a connection past its ${server.maxConnections} open at once`,
    );
  });
  server.on('connection', (socket: Socket) => {
    connections.add(socket);
    socket.once('close', () => {
      connections.delete(socket);
      if (connections.size === 0) drained?.();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  return {
    url: `https://${host}:${port}`,
    port,
    setCertificate: (key, cert) =>
      server.setSecureContext({ key, cert, ...(options.clientCa ? { ca: options.clientCa } : {}) }),
    close: async ({ drainMs = 0 } = {}) => {
      if (drainMs > 0 && connections.size > 0) {
        let timer: NodeJS.Timeout | undefined;
        await new Promise<void>((resolve) => {
          drained = resolve;
          timer = setTimeout(resolve, drainMs);
        });
        clearTimeout(timer);
      }
      return new Promise<void>((resolve) => {
        server.close(() => resolve());
        // The apiserver keeps connections open between reviews (90 s idle, a client certificate's
        // too, which closing idle connections leaves be): all go once no review is being answered.
        closing = () => server.closeAllConnections();
        if (answering === 0) closing();
      });
    },
  };
}

/**
 * A request's body as read: its text, or none when over the limit or the budget; `held`, the bytes it
 * took from the budget, given back once the review is answered.
 */
interface Body {
  text?: string;
  overBudget?: true;
  held: number;
}

/**
 * The body as text, or none when it is over `limit` bytes or the budget has no room for it (read no
 * further). Its bytes are taken from the budget as they come, the length said up front at once. From
 * Node's request itself: the web stream of a Request costs more than a review's decision.
 */
function readBody(incoming: IncomingMessage, limit: number, budget: BodyBudget): Promise<Body> {
  const said = Number(incoming.headers['content-length'] ?? 0);
  if (said > limit) return Promise.resolve({ held: 0 });
  if (!budget.take(said)) return Promise.resolve({ overBudget: true, held: 0 });
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let held = said;
    let settled = false;
    const settle = (body: Body) => {
      settled = true;
      resolve(body);
    };
    const stop = (body: Body) => {
      // Answered at once, and the connection closed: the rest is not read.
      incoming.off('data', onData);
      settle(body);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.byteLength;
      if (size > limit) return stop({ held });
      if (size > held) {
        if (!budget.take(size - held)) return stop({ overBudget: true, held });
        held = size;
      }
      chunks.push(chunk);
    };
    incoming.on('data', onData);
    incoming.once('end', () => {
      if (!settled) settle({ text: Buffer.concat(chunks, size).toString('utf8'), held });
    });
    incoming.once('error', (error) => {
      if (settled) return; // what it held is given back once its answer is made
      settled = true;
      budget.give(held);
      reject(new Error(`the client went away before its review came whole (${error.message})`));
    });
  });
}
