import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { operator } from '../../functions/index.ts';
import { invocation, KOPF_EXAMPLES, SECRET } from '../../functions/test-helpers.ts';
import { MAX_DELAY_SECONDS, PATHS, PROTOCOL } from '../../protocol/index.ts';
import { eventually } from '../../test/support/operator.ts';
import { createLogger } from '../logging.ts';
import { CircuitBreaker } from './breaker.ts';
import { Budget } from './budget.ts';
import { callServices } from './calls.ts';
import { FunctionService, retryAfterMs, ServiceError } from './function-service.ts';
import { hmacSigner } from './signer.ts';
import { httpTransport, inProcessTransport, ReplyTooLarge } from './transport.ts';

const exchange = (timeoutMs: number) =>
  ({ method: 'POST', path: '/invoke', headers: {}, body: new Uint8Array(), timeoutMs }) as const;

describe('transports', () => {
  it('in-process: a handler that never answers is given up after the timeout, and its request aborted', async () => {
    let seen: Request | undefined;
    const transport = inProcessTransport({
      fetch: (request) => {
        seen = request;
        return new Promise<Response>(() => {});
      },
    });
    await assert.rejects(transport.send(exchange(50)), {
      name: 'TimeoutError',
      message: 'no answer within 50 ms',
    });
    assert.equal(seen?.signal.aborted, true, 'the handler can see that it was given up');
  });

  it('in-process: an answered call is done with its deadline: its signal never aborts afterwards', async () => {
    // The requests are kept, not only their signals: a Request's signal follows the caller's through
    // a weak reference, so a collected Request stops passing the abort on (a flake seen in CI).
    const requests: Request[] = [];
    const transport = inProcessTransport({
      fetch: (request) => {
        requests.push(request);
        return request.url.endsWith('/hang') ? new Promise<Response>(() => {}) : new Response('{}');
      },
    });
    // Warmed up first: the runtime's first Request and Response can take longer than the deadline
    // on a loaded machine, which is not what this test is about.
    await transport.send(exchange(5000));
    requests.length = 0;
    assert.equal((await transport.send(exchange(50))).status, 200);
    // A later call with the same deadline times out: the first call's deadline has passed by then too.
    await assert.rejects(transport.send({ ...exchange(50), path: '/hang' }), { name: 'TimeoutError' });
    assert.deepEqual(
      requests.map((request) => request.signal.aborted),
      [false, true],
    );
  });

  it('over HTTP: a service that never answers is given up after the timeout', async (t) => {
    const server = createServer((request, response) => {
      if (request.url === '/hang') return; // never answers
      response.end('{}');
    });
    await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
    const transport = httpTransport(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    t.after(async () => {
      server.closeAllConnections();
      await transport.close();
      await new Promise((closed) => server.close(closed));
    });

    assert.equal((await transport.send(exchange(30_000))).status, 200);
    await assert.rejects(transport.send({ ...exchange(50), path: '/hang' }), {
      name: 'TimeoutError',
      message: 'no answer within 50 ms',
    });
  });
});

describe('the longest reply read', () => {
  const MiB = 1024 * 1024;
  const chunk = new Uint8Array(64 * 1024).fill(0x20);

  /** A server whose `/endless` never stops sending; `closed` resolves when the gateway hangs up on it. */
  async function endlessServer(t: { after(fn: () => unknown): void }) {
    let hungUp: () => void = () => {};
    const closed = new Promise<void>((resolve) => {
      hungUp = resolve;
    });
    const server = createServer((request, response) => {
      response.on('close', hungUp);
      if (request.url === '/declared') {
        response.writeHead(200, { 'content-length': String(2 * MiB) });
        response.write(chunk);
        return; // the rest never comes: only the declared length can tell
      }
      if (request.url === '/fits') return void response.end(new Uint8Array(MiB).fill(0x20));
      const more = () => {
        while (response.write(chunk));
      };
      response.on('drain', more);
      more();
    });
    await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
    const transport = httpTransport(
      `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      undefined,
      2,
      MiB,
    );
    t.after(async () => {
      server.closeAllConnections();
      await transport.close();
      await new Promise((done) => server.close(done));
    });
    return { transport, closed };
  }

  it('over HTTP: stops reading a reply once it is over the cap, and hangs up', async (t) => {
    const { transport, closed } = await endlessServer(t);
    assert.equal((await transport.send({ ...exchange(30_000), path: '/fits' })).text.length, MiB);
    await assert.rejects(
      transport.send({ ...exchange(30_000), path: '/endless' }),
      (error: unknown) => error instanceof ReplyTooLarge && error.message === 'over 1 MiB',
    );
    await closed;
  });

  it('over HTTP: refuses a reply whose declared length is over the cap, before reading it', async (t) => {
    const { transport, closed } = await endlessServer(t);
    await assert.rejects(
      transport.send({ ...exchange(30_000), path: '/declared' }),
      (error: unknown) => error instanceof ReplyTooLarge,
    );
    await closed;
  });

  it('in-process: stops reading a stream once it is over the cap, and cancels it', async () => {
    let cancelled: () => void = () => {};
    const cancel = new Promise<void>((resolve) => {
      cancelled = resolve;
    });
    let pulled = 0;
    const transport = inProcessTransport(
      {
        fetch: () =>
          new Response(
            new ReadableStream<Uint8Array>({
              pull: (controller) => {
                pulled += chunk.byteLength;
                controller.enqueue(chunk);
              },
              cancel: () => cancelled(),
            }),
          ),
      },
      MiB,
    );
    await assert.rejects(
      transport.send(exchange(30_000)),
      (error: unknown) => error instanceof ReplyTooLarge,
    );
    await cancel;
    assert.ok(pulled <= 2 * MiB, `read ${pulled} bytes of a 1-MiB cap`);
  });
});

describe('a reply over the cap', () => {
  it('fails the call saying so, and does not count the service as unreachable', async (t) => {
    const op = operator({ name: 'verbose', secret: SECRET });
    op.on.create('kopfexamples', function create_fn() {});
    const handler = {
      fetch: (request: Request) =>
        new URL(request.url).pathname === PATHS.invoke
          ? new Response(`{"protocol":"${PROTOCOL}","padding":"${'x'.repeat(2 * 1024 * 1024)}"}`)
          : op.fetch(request),
    };
    const breaker = new CircuitBreaker({
      threshold: 1,
      probeDelaysS: [60],
      probe: async () => {},
      logger: createLogger({ level: 'error' }),
    });
    t.after(() => breaker.close());
    const service = await FunctionService.connect({
      transport: inProcessTransport(handler, 1024 * 1024),
      name: 'verbose',
      sign: hmacSigner(new TextEncoder().encode(SECRET)),
      breaker,
    });
    await assert.rejects(
      service.invoke(invocation(['create_fn'])),
      (error: unknown) =>
        error instanceof ServiceError &&
        !error.unreachable &&
        error.message ===
          `POST http://in-process${PATHS.invoke}: the reply of service "verbose" is over 1 MiB, the most the gateway reads (calls.maxReplyBytes); the rest was not read`,
    );
    assert.equal(service.down, undefined);
  });
});

describe('a service over HTTP', () => {
  it('gets at most `connections` calls at once; the others wait their turn and are answered', async (t) => {
    let inFlight = 0;
    let most = 0;
    const server = createServer((_request, response) => {
      inFlight++;
      most = Math.max(most, inFlight);
      setTimeout(() => {
        inFlight--;
        response.end('{}');
      }, 20);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const transport = httpTransport(
      `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      undefined,
      2,
    );
    t.after(() => transport.close());
    const answers = await Promise.all(Array.from({ length: 8 }, () => transport.send(exchange(5000))));
    assert.deepEqual(
      answers.map((answer) => answer.status),
      Array(8).fill(200),
    );
    assert.equal(most, 2);
  });
});

describe('a service that goes down with calls in flight', () => {
  it('has the calls that fail as its circuit opens wait for it, and only those before fail', async (t) => {
    const op = operator({ name: 'fragile', secret: SECRET });
    op.on.create('kopfexamples', function create_fn() {});
    const CALLS = 6;
    let reached = 0;
    const allReached = Promise.withResolvers<void>();
    const goDown = Promise.withResolvers<void>();
    const handler = {
      async fetch(request: Request) {
        if (new URL(request.url).pathname !== PATHS.invoke) return op.fetch(request);
        if (++reached === CALLS) allReached.resolve();
        await goDown.promise;
        throw Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
      },
    };
    const breaker = new CircuitBreaker({
      threshold: 3,
      probeDelaysS: [60],
      probe: () => new Promise(() => {}),
      logger: createLogger({ level: 'error' }),
    });
    t.after(() => breaker.close());
    const service = await FunctionService.connect({
      transport: inProcessTransport(handler),
      name: 'fragile',
      sign: hmacSigner(new TextEncoder().encode(SECRET)),
      breaker,
    });
    const subject = { reason: 'create', resource: KOPF_EXAMPLES, object: invocation([]).body } as const;
    const handlers = [{ id: 'create_fn', retry: 0, started: new Date().toISOString(), idempotencyKey: 'k' }];
    const answers = Promise.all(
      Array.from({ length: CALLS }, () =>
        callServices([{ service, handlers }], subject, [1], createLogger({ level: 'error' })),
      ),
    );
    await allReached.promise;
    goDown.resolve();
    const outcomes = (await answers).map(
      ([answer]) => answer?.outcomes.create_fn?.status ?? (answer?.down && 'waits'),
    );
    assert.deepEqual(
      outcomes,
      ['temporary', 'temporary', 'waits', 'waits', 'waits', 'waits'],
      'the two failures before the threshold are recorded; the rest wait, writing nothing',
    );
  });
});

describe('Retry-After', () => {
  it('is read as seconds or as an HTTP date, and ignored when it is neither', () => {
    const now = Date.parse('2026-11-23T10:00:00Z');
    assert.equal(retryAfterMs('7', now), 7000);
    assert.equal(retryAfterMs('Mon, 23 Nov 2026 10:00:30 GMT', now), 30_000);
    assert.equal(retryAfterMs('Mon, 23 Nov 2026 09:00:00 GMT', now), 0);
    assert.equal(retryAfterMs('soon', now), undefined);
    assert.equal(retryAfterMs(undefined, now), undefined);
  });

  it('is a year at most, the longest delay of the protocol: a service cannot ask for one with no date', () => {
    const now = Date.parse('2026-11-23T10:00:00Z');
    const year = MAX_DELAY_SECONDS * 1000;
    assert.equal(retryAfterMs('1e300', now), year);
    assert.equal(retryAfterMs('Fri, 31 Dec 9999 23:59:59 GMT', now), year);
    assert.equal(retryAfterMs(String(MAX_DELAY_SECONDS - 1), now), year - 1000);
  });

  /**
   * A service whose calls are answered `status` with `Retry-After: retryAfter` while `busy()`, and
   * `call()`, which asks it for create_fn once as the reactor does.
   */
  async function busyService(status: number, retryAfter: string, busy: () => boolean = () => true) {
    const op = operator({ name: 'busy', secret: SECRET });
    op.on.create('kopfexamples', function create_fn() {});
    const handler = {
      fetch: (request: Request) =>
        busy() && new URL(request.url).pathname === PATHS.invoke
          ? Response.json(
              { protocol: PROTOCOL, error: 'busy' },
              { status, headers: { 'retry-after': retryAfter } },
            )
          : op.fetch(request),
    };
    const service = await FunctionService.connect({
      transport: inProcessTransport(handler),
      name: 'busy',
      sign: hmacSigner(new TextEncoder().encode(SECRET)),
    });
    const { body, handlers } = invocation(['create_fn']);
    const subject = { reason: 'create' as const, resource: KOPF_EXAMPLES, object: body };
    const quiet = createLogger({ level: 'error' });
    return async () => {
      const [answer] = await callServices([{ service, handlers }], subject, [1, 2, 5], quiet);
      return answer?.outcomes.create_fn;
    };
  }

  it('of a busy service delays its handlers that long, when it is longer than the backoff', async () => {
    let busy = true;
    const call = await busyService(503, '7', () => busy);
    assert.deepEqual(await call(), {
      status: 'temporary',
      message: `POST http://in-process${PATHS.invoke}: 503 busy`,
      delay: 7,
    });
    busy = false;
    assert.equal((await call())?.status, 'success');
  });

  it('of 1e300 seconds delays its handlers a year, a delay whose end has a date', async () => {
    const outcome = await (await busyService(429, '1e300'))();
    const delay = outcome?.status === 'temporary' ? outcome.delay : undefined;
    assert.equal(delay, MAX_DELAY_SECONDS);
    assert.equal(
      new Date(Date.now() + (delay as number) * 1000).toISOString().length,
      24,
      'its end is a date',
    );
  });
});

describe("a service's budgets, over HTTP", () => {
  const KiB = 1024;
  const budgetsOf = (replyBytes: number, calls = 8) => ({
    replyBytes: new Budget(replyBytes),
    calls: new Budget(calls),
  });

  /**
   * A server: `/declared/<n>` answers n KiB with a Content-Length, `/streamed/<n>` n KiB without one, in
   * pieces, `/partial` half an answer and then nothing; `sent` counts the bytes it wrote.
   */
  async function budgetServer(t: { after(fn: () => unknown): void }) {
    const sent = { bytes: 0 };
    const server = createServer((request, response) => {
      const [, route, size] = (request.url ?? '').split('/');
      const body = new Uint8Array(Number(size ?? 0) * KiB).fill(0x20);
      if (route === 'declared') {
        response.writeHead(200, { 'content-length': String(body.byteLength) });
        sent.bytes += body.byteLength;
        return void response.end(body);
      }
      if (route === 'partial') {
        response.writeHead(200, { 'content-length': String(64 * KiB) });
        return void response.write(new Uint8Array(32 * KiB));
      }
      let offset = 0;
      const more = () => {
        while (offset < body.byteLength) {
          const piece = body.subarray(offset, offset + 16 * KiB);
          offset += piece.byteLength;
          sent.bytes += piece.byteLength;
          if (!response.write(piece)) return;
        }
        response.end();
      };
      response.on('drain', more);
      more();
    });
    await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    t.after(async () => {
      server.closeAllConnections();
      await new Promise((done) => server.close(done));
    });
    return { url, sent };
  }

  const withTransport = (
    t: { after(fn: () => unknown): void },
    url: string,
    budgets: ReturnType<typeof budgetsOf>,
  ) => {
    const transport = httpTransport(url, undefined, budgets.calls.limit, 1024 * KiB, { budgets });
    t.after(() => transport.close());
    return transport;
  };

  it("holds a reply's declared length until it is released; the next waits for it, then is read", async (t) => {
    const { url } = await budgetServer(t);
    const budgets = budgetsOf(1024 * KiB);
    const transport = withTransport(t, url, budgets);
    const first = await transport.send({ ...exchange(30_000), path: '/declared/600' });
    assert.equal(budgets.replyBytes.used, 600 * KiB);
    const second = transport.send({ ...exchange(30_000), path: '/declared/600' });
    await eventually(
      'the second reply waiting for the budget',
      async () => budgets.replyBytes.waits === 1 || undefined,
    );
    assert.equal(budgets.replyBytes.used, 600 * KiB, 'not read while the first holds the budget');
    first.release();
    first.release(); // once only
    const read = await second;
    assert.deepEqual([read.text.length, budgets.replyBytes.used], [600 * KiB, 600 * KiB]);
    read.release();
    assert.equal(budgets.replyBytes.used, 0);
  });

  it('takes the bytes of a reply without a declared length as they arrive, and stops reading while the budget is short', async (t) => {
    const { url, sent } = await budgetServer(t);
    const budgets = budgetsOf(1024 * KiB);
    const transport = withTransport(t, url, budgets);
    await budgets.replyBytes.acquire(512 * KiB); // another reply of the service, being parsed
    const streamed = transport.send({ ...exchange(30_000), path: '/streamed/900' });
    await eventually(
      'the streamed reply waiting for the budget',
      async () => budgets.replyBytes.waits === 1 || undefined,
    );
    assert.ok(budgets.replyBytes.used <= 1024 * KiB, `${budgets.replyBytes.used} bytes held`);
    budgets.replyBytes.release(512 * KiB);
    const read = await streamed;
    assert.deepEqual(
      [read.text.length, sent.bytes, budgets.replyBytes.used],
      [900 * KiB, 900 * KiB, 900 * KiB],
    );
    read.release();
    assert.equal(budgets.replyBytes.used, 0);
  });

  it('gives back what a reply held when it fails: timed out mid-reply, cut off, over the cap', async (t) => {
    const { url } = await budgetServer(t);
    const budgets = budgetsOf(2048 * KiB);
    const transport = withTransport(t, url, budgets);
    await assert.rejects(transport.send({ ...exchange(200), path: '/partial' }), { name: 'TimeoutError' });
    assert.equal(budgets.replyBytes.used, 0, 'after a timeout');
    const cut = new AbortController();
    const cutOff = transport.send({ ...exchange(30_000), path: '/partial', cut: cut.signal });
    await eventually('the partial reply held', async () => budgets.replyBytes.used > 0 || undefined);
    cut.abort(new Error('cut off'));
    await assert.rejects(cutOff, /cut off/);
    assert.equal(budgets.replyBytes.used, 0, 'after a cut');
    await assert.rejects(transport.send({ ...exchange(30_000), path: '/streamed/1100' }), ReplyTooLarge);
    assert.equal(budgets.replyBytes.used, 0, 'after a reply over the cap');
    assert.equal(budgets.calls.used, 0, 'and every call gave back its place');
  });

  it('holds its calls in flight to the budget of calls: the next waits its turn within its deadline', async (t) => {
    const { url } = await budgetServer(t);
    const budgets = budgetsOf(1024 * KiB, 1);
    const transport = withTransport(t, url, budgets);
    const hanging = transport.send({ ...exchange(300), path: '/partial' });
    const next = transport.send({ ...exchange(30_000), path: '/declared/1' });
    await eventually(
      'the next call waiting for its turn',
      async () => budgets.calls.waits === 1 || undefined,
    );
    await assert.rejects(hanging, { name: 'TimeoutError' });
    const answered = await next;
    answered.release();
    assert.deepEqual([answered.text.length, budgets.calls.used, budgets.replyBytes.used], [KiB, 0, 0]);
  });

  it('gives back the reply bytes once a FunctionService has read the answer, good or bad', async (t) => {
    const budgets = budgetsOf(1024 * KiB);
    const server = createServer((request, response) => {
      if (request.url === PATHS.health) {
        return void response.end(JSON.stringify({ status: 'ok', protocol: PROTOCOL, name: 'held' }));
      }
      response.end(request.url === PATHS.manifest ? '{"not":"a manifest"}' : 'not json');
    });
    await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
    t.after(() => new Promise((done) => server.close(done)));
    const transport = withTransport(t, `http://127.0.0.1:${(server.address() as AddressInfo).port}`, budgets);
    await assert.rejects(
      FunctionService.connect({
        transport,
        name: 'held',
        sign: hmacSigner(new TextEncoder().encode(SECRET)),
        budgets: { ...budgets, daemons: new Budget(1), indexBytes: new Budget(1) },
      }),
    );
    assert.equal(budgets.replyBytes.used, 0);
  });
});
