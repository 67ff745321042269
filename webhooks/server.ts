/**
 * The admission webhook server: HTTPS only (Node's https with Hono), one path per webhook. It parses
 * the AdmissionReview, asks a decision callback for the verdict and answers the review; it knows
 * nothing of handlers or gateways, so it runs alone in its tests. A body limit (the connection is
 * closed past it), 30 s to send a request, a deadline below the webhook's own timeout, and a 400 with the
 * reason for a malformed review: never a crash.
 */

import type { IncomingMessage } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { getRequestListener, type HttpBindings } from '@hono/node-server';
import { Hono } from 'hono';
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
/** The apiserver sends a review at once; Node's default (300 s) lets a slow client hold sockets for long. */
const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;
/** A TLS handshake not done by then is dropped (Node's default is 120 s). */
const HANDSHAKE_TIMEOUT_MS = 10_000;

function webhookApp(
  options: Pick<WebhookServerOptions, 'decide' | 'deadlineMs' | 'logger' | 'bodyLimitBytes' | 'observe'>,
) {
  const limit = options.bodyLimitBytes ?? DEFAULT_BODY_LIMIT;
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
    const body = await readBody(c.env.incoming, limit);
    if (body === undefined) {
      // Closed once answered: Node would otherwise read whatever the client keeps sending, to reuse the connection.
      return c.json({ error: `the review is larger than ${limit} bytes` }, 413, { connection: 'close' });
    }
    const webhook = new URL(c.req.url).pathname;
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
  });
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
 * The body as text, or undefined when it is over `limit` bytes (read no further). From Node's request
 * itself: the web stream of a Request costs more than a review's decision.
 */
function readBody(incoming: IncomingMessage, limit: number): Promise<string | undefined> {
  if (Number(incoming.headers['content-length'] ?? 0) > limit) return Promise.resolve(undefined);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.byteLength;
      if (size <= limit) return void chunks.push(chunk);
      // Answered at once, and the connection closed: the rest is not read.
      incoming.off('data', onData);
      resolve(undefined);
    };
    incoming.on('data', onData);
    incoming.once('end', () =>
      resolve(size > limit ? undefined : Buffer.concat(chunks, size).toString('utf8')),
    );
    incoming.once('error', (error) =>
      reject(new Error(`the client went away before its review came whole (${error.message})`)),
    );
  });
}
