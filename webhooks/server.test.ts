import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { once } from 'node:events';
import { connect as netConnect } from 'node:net';
import { describe, it, type TestContext } from 'node:test';
import { connect, type TLSSocket } from 'node:tls';
import fc from 'fast-check';
import jsonpatch from 'fast-json-patch';
import { generate } from 'selfsigned';
import { Agent, fetch } from 'undici';
import { admissionReview } from '../test/support/arbitraries.ts';
import { type CertificateAuthority, renewCertificates } from './certificates.ts';
import { jsonPatchOf } from './patch.ts';
import type { ReviewRequest } from './review.ts';
import { type Decide, startWebhookServer, type WebhookServerOptions } from './server.ts';

const certificates = (await renewCertificates(undefined, ['127.0.0.1', 'localhost'])).certificates;
const quiet = { warning: () => {}, error: () => {} };

async function serve(t: TestContext, decide: Decide, options: Partial<WebhookServerOptions> = {}) {
  const server = await startWebhookServer({
    host: '127.0.0.1',
    port: 0,
    key: certificates.key,
    cert: certificates.cert,
    decide,
    deadlineMs: () => 2000,
    logger: quiet,
    ...options,
  });
  t.after(() => server.close());
  const dispatcher = new Agent({ connect: { ca: certificates.ca.cert } });
  t.after(() => dispatcher.close());
  const post = (path: string, body: string | ReadableStream<Uint8Array>) =>
    fetch(`${server.url}${path}`, {
      method: 'POST',
      body,
      duplex: 'half',
      headers: { 'content-type': 'application/json' },
      dispatcher,
    });
  return { server, post };
}

/** A TLS connection to the server, speaking HTTP by hand; what it received is kept for `received`. */
async function rawConnection(t: TestContext, port: number): Promise<TLSSocket> {
  const socket = connect({ host: '127.0.0.1', port, ca: certificates.ca.cert });
  t.after(() => socket.destroy());
  const chunks: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  socket.on('error', () => {}); // a reset while writing, once the server closes
  receivedBy.set(socket, chunks);
  await once(socket, 'secureConnect');
  return socket;
}

/** The socket's end, however it comes: a reset while writing is an end too. */
const closing = (socket: TLSSocket) => new Promise<void>((resolve) => socket.once('close', () => resolve()));

const receivedBy = new WeakMap<TLSSocket, Buffer[]>();
const received = (socket: TLSSocket) => Buffer.concat(receivedBy.get(socket) ?? []).toString();

/**
 * The answer of `request` once its status is `status`: the bytes a raw connection wrote reach the
 * server a little after the write returns.
 */
async function eventuallyStatus(request: () => Promise<Response>, status: number): Promise<Response> {
  for (let attempt = 0; ; attempt++) {
    const answer = await request();
    if (answer.status === status || attempt === 50) return answer;
    await answer.arrayBuffer();
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** `what` done, or a failure that says what did not happen in `ms`. */
async function within<T>(ms: number, what: Promise<T>, description: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${description}`)), ms);
  });
  try {
    return await Promise.race([what, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** A client certificate `ca` signs, as a cluster admin gives the apiserver one. */
async function clientCertificate(ca: CertificateAuthority): Promise<{ cert: string; key: string }> {
  const generated = await generate([{ name: 'commonName', value: 'kube-apiserver' }], {
    keyType: 'ec',
    curve: 'P-256',
    algorithm: 'sha256',
    ca,
    extensions: [
      { name: 'keyUsage', digitalSignature: true, critical: true },
      { name: 'extKeyUsage', clientAuth: true },
    ],
  });
  return { cert: generated.cert, key: generated.private };
}

function review(operation = 'CREATE', object: Record<string, unknown> = {}): string {
  return JSON.stringify({
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid: 'review-1',
      kind: { group: 'kopf.dev', version: 'v1', kind: 'KopfExample' },
      resource: { group: 'kopf.dev', version: 'v1', resource: 'kopfexamples' },
      operation,
      userInfo: { username: 'alice' },
      object: { apiVersion: 'kopf.dev/v1', kind: 'KopfExample', metadata: { name: 'a' }, ...object },
      dryRun: false,
    },
  });
}

describe('the webhook server', () => {
  it('answers a review over HTTPS with the verdict, the patch base64-encoded as a JSONPatch', async (t) => {
    const seen: Array<[string, ReviewRequest]> = [];
    const { post } = await serve(t, async (request, webhook) => {
      seen.push([webhook, request]);
      return { allowed: true, warnings: ['careful'], patch: [{ op: 'add', path: '/spec', value: { a: 1 } }] };
    });
    const answer = (await (await post('/svc/check', review())).json()) as {
      response: Record<string, unknown>;
    };
    assert.equal(seen[0]?.[0], '/svc/check');
    assert.equal(seen[0]?.[1].userInfo.username, 'alice');
    assert.deepEqual(
      {
        ...answer.response,
        patch: JSON.parse(Buffer.from(answer.response.patch as string, 'base64').toString()),
      },
      {
        uid: 'review-1',
        allowed: true,
        warnings: ['careful'],
        patchType: 'JSONPatch',
        patch: [{ op: 'add', path: '/spec', value: { a: 1 } }],
      },
    );
  });

  it('answers a denial with its message and code, and no patch', async (t) => {
    const { post } = await serve(t, async () => ({
      allowed: false,
      status: { message: 'spec.field is required', code: 422 },
      patch: [{ op: 'add', path: '/x', value: 1 }],
    }));
    const answer = (await (await post('/v', review())).json()) as { response: Record<string, unknown> };
    assert.deepEqual(answer.response, {
      uid: 'review-1',
      allowed: false,
      status: { message: 'spec.field is required', code: 422 },
    });
  });

  it('refuses malformed reviews with a 400 that says why, without asking for a decision', async (t) => {
    let asked = 0;
    const { post } = await serve(t, async () => {
      asked++;
      return { allowed: true };
    });
    const cases: Array<[string, RegExp]> = [
      ['not json', /not JSON/],
      ['[]', /not a JSON object/],
      [
        JSON.stringify({ apiVersion: 'admission.k8s.io/v1beta1', kind: 'AdmissionReview' }),
        /expected an AdmissionReview of admission.k8s.io\/v1/,
      ],
      [review('PATCH'), /request.operation "PATCH" is not an operation/],
      [
        JSON.stringify({
          ...JSON.parse(review()),
          request: { ...JSON.parse(review()).request, object: undefined },
        }),
        /neither object nor oldObject/,
      ],
    ];
    for (const [body, reason] of cases) {
      const answer = await post('/v', body);
      assert.equal(answer.status, 400);
      assert.match(((await answer.json()) as { error: string }).error, reason);
    }
    assert.equal(asked, 0);
  });

  it('refuses a review over the body limit with 413', async (t) => {
    const { post } = await serve(t, async () => ({ allowed: true }), { bodyLimitBytes: 1024 });
    const answer = await post('/v', review('CREATE', { spec: { blob: 'x'.repeat(2048) } }));
    assert.equal(answer.status, 413);
  });

  for (const [said, head] of [
    ['a review said to be over the limit', 'Content-Length: 10485760'],
    ['a chunked review (no length said) once it grows over the limit', 'Transfer-Encoding: chunked'],
  ] as const) {
    it(`answers ${said} with 413 and closes the connection while the client keeps sending`, async (t) => {
      const decided: string[] = [];
      const { server, post } = await serve(
        t,
        async (request) => {
          decided.push(request.uid);
          return { allowed: true };
        },
        { bodyLimitBytes: 1024 },
      );
      const socket = await rawConnection(t, server.port);
      socket.write(
        `POST /v HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n${head}\r\n\r\n`,
      );
      const chunk = 'x'.repeat(512);
      const framed = head.startsWith('Transfer') ? `${chunk.length.toString(16)}\r\n${chunk}\r\n` : chunk;
      const closed = closing(socket);
      // A client that never stops: up to 10 MiB, as fast as the socket takes it.
      void (async () => {
        for (let sent = 0; sent < 10 * 1024 * 1024 && socket.writable; sent += chunk.length) {
          if (!socket.write(framed)) await Promise.race([once(socket, 'drain'), closed]);
        }
      })().catch(() => {}); // the server closing mid-write is what is expected
      try {
        await within(5000, closed, 'the connection to be closed');
      } finally {
        socket.destroy();
      }
      const answered = received(socket);
      assert.match(answered, /^HTTP\/1\.1 413 /);
      assert.match(answered, /\r\nconnection: close\r\n/i);
      assert.match(answered, /\{"error":"the review is larger than 1024 bytes"\}/);
      assert.equal((await post('/v', review())).status, 200, 'the next connection is served');
      assert.deepEqual(decided, ['review-1'], 'only the review within the limit was decided');
    });
  }

  it('holds the bytes of all the bodies within its budget: a review past it is answered 503, the others are decided, and the budget is free again after', async (t) => {
    const warnings: string[] = [];
    const { server, post } = await serve(t, async () => ({ allowed: true }), {
      bodyLimitBytes: 1024,
      bodyBudgetBytes: 2048,
      logger: { warning: (message) => warnings.push(message), error: () => {} },
    });
    // Two clients each say a body of 1000 bytes and send only its first bytes: 2000 of 2048 held.
    const body = review('CREATE', { spec: { pad: '' } });
    const padded = review('CREATE', { spec: { pad: 'x'.repeat(1000 - body.length) } });
    assert.equal(padded.length, 1000);
    const holders = [];
    for (let i = 0; i < 2; i++) {
      const socket = await rawConnection(t, server.port);
      socket.write(
        `POST /v HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${padded.length}\r\n\r\n${padded.slice(0, 10)}`,
      );
      holders.push(socket);
    }
    // A third, of a few hundred bytes, finds no room; the server says so and closes its connection.
    const refused = await eventuallyStatus(() => post('/v', review()), 503);
    assert.equal(refused.headers.get('connection'), 'close');
    assert.deepEqual(await refused.json(), {
      error: 'the webhook server holds too many reviews at once: try again',
    });
    assert.match(
      warnings.join('\n'),
      /refused a review: the server holds 2048 bytes of reviews at most, and is full/,
    );
    // The two held come whole and are decided; their bytes are given back: the next review is decided.
    for (const socket of holders) {
      const answered = new Promise<void>((resolve) => socket.once('data', () => resolve()));
      socket.write(padded.slice(10));
      await within(5000, answered, 'the held review to be answered');
      assert.match(received(socket), /^HTTP\/1\.1 200 /);
    }
    assert.equal((await post('/v', review())).status, 200);
  });

  it('closes the connections past its cap as they come, and serves again once one goes', async (t) => {
    const warnings: string[] = [];
    const { server, post } = await serve(t, async () => ({ allowed: true }), {
      maxConnections: 2,
      logger: { warning: (message) => warnings.push(message), error: () => {} },
    });
    const kept = [await rawConnection(t, server.port), await rawConnection(t, server.port)];
    const third = netConnect({ host: '127.0.0.1', port: server.port });
    third.on('error', () => {});
    const thirdClosed = new Promise<void>((resolve) => third.once('close', () => resolve()));
    await within(5000, thirdClosed, 'the connection past the cap to be closed');
    assert.deepEqual(warnings, ['webhook server: closed a connection past its 2 open at once']);
    const gone = closing(kept[0] as TLSSocket);
    kept[0]?.destroy();
    await gone;
    assert.equal((await post('/v', review())).status, 200, 'a connection within the cap is served');
  });

  it('refuses headers over 8 KiB with 431 (Node alone would take 16)', async (t) => {
    const { server } = await serve(t, async () => ({ allowed: true }));
    const socket = await rawConnection(t, server.port);
    const closed = closing(socket);
    socket.write(`POST /v HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ${'a'.repeat(9 * 1024)}\r\n\r\n`);
    await within(5000, closed, 'the connection to be closed');
    assert.match(received(socket), /^HTTP\/1\.1 431 /);
  });

  it('cuts off a client that sends its request too slowly (a slow loris), headers or body, or never shakes hands', async (t) => {
    const warnings: string[] = [];
    const { server, post } = await serve(t, async () => ({ allowed: true }), {
      requestTimeoutMs: 500,
      logger: { warning: (message) => warnings.push(message), error: () => {} },
    });
    const body = review();
    const requests = [
      // Headers that never end.
      'POST /v HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ',
      // Whole headers, and a body that never comes whole.
      `POST /v HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 10)}`,
    ];
    for (const request of requests) {
      const socket = await rawConnection(t, server.port);
      const closed = closing(socket);
      socket.write(request);
      // A byte now and then keeps a socket-idle timeout from ever firing: only the request's own does.
      const trickle = setInterval(() => socket.writable && socket.write('x'), 100);
      try {
        await within(5000, closed, 'the slow client to be cut off');
      } finally {
        clearInterval(trickle);
        socket.destroy();
      }
      assert.match(received(socket), /^HTTP\/1\.1 408 /, request);
    }
    // And one that never starts its TLS handshake.
    const silent = netConnect({ host: '127.0.0.1', port: server.port });
    silent.on('error', () => {});
    const silentClosed = new Promise<void>((resolve) => silent.once('close', () => resolve()));
    try {
      await within(5000, silentClosed, 'a client without a handshake to be cut off');
    } finally {
      silent.destroy();
    }
    assert.equal((await post('/v', review())).status, 200, 'a prompt client is served');
    assert.deepEqual(warnings, [
      'webhook /v: the client went away before its review came whole (aborted)',
      'webhook server: refused a TLS connection: TLS handshake timeout',
    ]);
  });

  it('answers 500 when no decision comes before the deadline, so the failure policy applies', async (t) => {
    let aborted = false;
    const { post } = await serve(
      t,
      (_review, _webhook, signal) =>
        new Promise((resolve) => {
          signal.addEventListener('abort', () => {
            aborted = true;
            resolve({ allowed: true });
          });
        }),
      { deadlineMs: () => 100 },
    );
    const answer = await post('/v', review());
    assert.equal(answer.status, 500);
    assert.match(((await answer.json()) as { error: string }).error, /no decision before the deadline/);
    assert.equal(aborted, true, 'the decision is told to stop');
  });

  it('serves a renewed certificate from the next connection on, without a restart', async (t) => {
    const { server } = await serve(t, async () => ({ allowed: true }));
    const renewed = (
      await renewCertificates({ ...certificates, cert: certificates.cert }, ['127.0.0.1', 'renewed.example'])
    ).certificates;
    server.setCertificate(renewed.key, renewed.cert);
    const served = await new Promise<string>((resolve, reject) => {
      const socket = connect(
        {
          host: '127.0.0.1',
          port: server.port,
          ca: certificates.ca.cert,
          servername: 'localhost',
          checkServerIdentity: () => undefined,
        },
        () => {
          resolve(socket.getPeerX509Certificate()?.subjectAltName ?? '');
          socket.end();
        },
      );
      socket.on('error', reject);
    });
    assert.match(served, /renewed\.example/);
    assert.ok(
      new X509Certificate(renewed.cert).checkIssued(new X509Certificate(certificates.ca.cert)),
      'the same CA signs it',
    );
  });

  it('loses no request while its certificate is renewed under load', async (t) => {
    const { server, post } = await serve(t, async () => ({ allowed: true }));
    let renewing = true;
    const renewals = (async () => {
      let count = 0;
      while (renewing) {
        const next = (await renewCertificates(certificates, ['127.0.0.1', `renewal-${count++}.example`]))
          .certificates;
        server.setCertificate(next.key, next.cert);
      }
      return count;
    })();
    const answers = await Promise.all(
      Array.from({ length: 200 }, async () => (await post('/v', review())).status),
    );
    renewing = false;
    assert.ok((await renewals) > 0, 'certificates were swapped meanwhile');
    assert.deepEqual(new Set(answers), new Set([200]));
  });

  it('answers only clients with a certificate from the given CA, when given one, and logs each one refused', async (t) => {
    const warnings: string[] = [];
    const clientCa = (await renewCertificates(undefined, ['unused'])).certificates.ca;
    const otherCa = (await renewCertificates(undefined, ['unused'])).certificates.ca;
    let decided = 0;
    const decide = async () => {
      decided++;
      return { allowed: true };
    };
    const { server } = await serve(t, decide, {
      clientCa: clientCa.cert,
      logger: { warning: (message) => warnings.push(message), error: () => {} },
    });
    const postAs = async (client?: { cert: string; key: string }) => {
      const dispatcher = new Agent({ connect: { ca: certificates.ca.cert, ...client } });
      try {
        const answer = await fetch(`${server.url}/v`, { method: 'POST', body: review(), dispatcher });
        return answer.status;
      } catch {
        return 'refused';
      } finally {
        await dispatcher.close();
      }
    };
    assert.equal(await postAs(await clientCertificate(clientCa)), 200, 'the apiserver, say');
    assert.equal(await postAs(), 'refused', 'no certificate');
    assert.equal(await postAs(await clientCertificate(otherCa)), 'refused', "another CA's");
    assert.equal(decided, 1, 'only the review of the client with the right certificate was decided');
    assert.deepEqual(
      warnings.map((warning) => warning.replace(/ from 127\.0\.0\.1/, '')),
      [
        'webhook server: refused a TLS connection: peer did not return a certificate',
        'webhook server: refused a TLS connection: provider signature failure', // its CA's name is the same
      ],
    );
  });

  it('closes, once the reviews under way are answered, the connections clients keep open, with a certificate or not', async (t) => {
    const clientCa = (await renewCertificates(undefined, ['unused'])).certificates.ca;
    const client = await clientCertificate(clientCa);
    let release: () => void = () => {};
    const answered = new Promise<void>((resolve) => {
      release = resolve;
    });
    let deciding: () => void = () => {};
    const decisionAsked = new Promise<void>((resolve) => {
      deciding = resolve;
    });
    const server = await startWebhookServer({
      host: '127.0.0.1',
      port: 0,
      key: certificates.key,
      cert: certificates.cert,
      clientCa: clientCa.cert,
      decide: async (request) => {
        if (request.object?.metadata.name === 'under-way') {
          deciding();
          await answered;
        }
        return { allowed: true };
      },
      deadlineMs: () => 10_000,
      logger: quiet,
    });
    // As the apiserver does: a connection kept open after its review was answered, one never used.
    const dispatcher = new Agent({ connect: { ca: certificates.ca.cert, ...client } });
    t.after(() => dispatcher.destroy());
    const used = await fetch(`${server.url}/v`, { method: 'POST', body: review(), dispatcher });
    assert.equal(used.status, 200);
    await used.arrayBuffer();
    const spare = connect({ host: '127.0.0.1', port: server.port, ca: certificates.ca.cert, ...client });
    t.after(() => spare.destroy());
    await once(spare, 'secureConnect');
    const spareClosed = closing(spare);

    const underWay = fetch(`${server.url}/v`, {
      method: 'POST',
      body: review('CREATE', { metadata: { name: 'under-way' } }),
      dispatcher,
    });
    await decisionAsked;
    const closed = server.close();
    release();
    const last = await underWay;
    assert.equal(last.status, 200, 'the review under way is answered');
    await last.arrayBuffer();
    await within(5000, closed, 'the server to close');
    await within(5000, spareClosed, 'the spare connection to be closed');
  });

  it('drains when asked: reviews on kept connections are answered and close those connections; one left idle goes at the limit', async (t) => {
    const { server, post } = await serve(t, async () => ({ allowed: true }));
    const before = await post('/v', review());
    await before.arrayBuffer(); // its connection stays open, for the next review
    const idle = await rawConnection(t, server.port); // as the apiserver's spare one
    const idleClosed = closing(idle);

    const began = Date.now();
    const closed = server.close({ drainMs: 1000 });
    const during = await post('/v', review());
    assert.equal(during.status, 200, 'answered while draining');
    assert.equal(during.headers.get('connection'), 'close', 'its client sends the next elsewhere');
    await during.arrayBuffer();
    await within(5000, closed, 'the server to close');
    await within(5000, idleClosed, 'the idle connection to be closed');
    assert.ok(Date.now() - began >= 950, 'the idle connection held the drain to its limit');
  });
});

describe('generated reviews over HTTPS (property-based)', () => {
  /** What the server is sent: a review as the apiserver sends it, one broken, or one over the body limit. */
  // Weighted: a review over the limit closes its connection (a new TLS handshake each).
  const posted = fc.oneof(
    {
      weight: 6,
      arbitrary: admissionReview.map((review) => ({
        sent: 'review' as const,
        body: JSON.stringify(review),
        uid: review.request.uid,
      })),
    },
    {
      weight: 3,
      arbitrary: fc
        // Values that none of these fields may hold: neither a string nor an object.
        .tuple(
          admissionReview,
          fc.constantFrom('uid', 'operation', 'kind', 'resource', 'userInfo'),
          fc.constantFrom(null, true, 0, -1.5, [], [null]),
        )
        .map(([review, field, value]) => ({
          sent: 'broken' as const,
          body: JSON.stringify({ ...review, request: { ...review.request, [field]: value } }),
          field,
        })),
    },
    fc
      .constantFrom('not json', '', '{', '[]', 'null', '"review"')
      .map((body) => ({ sent: 'not a review' as const, body })),
    admissionReview.map((review) => ({
      sent: 'oversized' as const,
      body: JSON.stringify({ ...review, padding: 'x'.repeat(LIMIT) }),
    })),
  );
  const LIMIT = 16 * 1024;

  it('answers a review with its uid and patch, a broken one with a 400 that says why, one too large with a 413', async (t) => {
    const mutation = { metadata: { labels: { reviewed: 'yes' } } };
    const { post } = await serve(
      t,
      async (request) => {
        const object = request.object ?? request.oldObject;
        return {
          allowed: request.operation !== 'CONNECT',
          patch: jsonPatchOf(object, [mutation]),
          warnings: [request.uid],
        };
      },
      { bodyLimitBytes: LIMIT },
    );
    await fc.assert(
      fc.asyncProperty(posted, async (given) => {
        const answer = await post('/svc/mutate', given.body);
        const body = (await answer.json()) as { error?: string; response?: Record<string, unknown> };
        switch (given.sent) {
          case 'review': {
            assert.equal(answer.status, 200, body.error);
            const response = body.response as Record<string, unknown>;
            assert.equal(response.uid, given.uid);
            assert.deepEqual(response.warnings, [given.uid]);
            if (response.allowed) {
              const review = JSON.parse(given.body);
              const object = review.request.object ?? review.request.oldObject;
              const patch = JSON.parse(Buffer.from(response.patch as string, 'base64').toString('utf8'));
              assert.equal(response.patchType, 'JSONPatch');
              assert.deepEqual(
                jsonpatch.applyPatch(object, patch).newDocument.metadata.labels.reviewed,
                'yes',
              );
            }
            return;
          }
          case 'broken':
            assert.equal(answer.status, 400);
            assert.ok(body.error?.includes(`request.${given.field}`), body.error);
            return;
          case 'not a review':
            assert.equal(answer.status, 400);
            assert.match(
              body.error ?? '',
              /^the body is not (JSON|a JSON object)|^expected an AdmissionReview/,
            );
            return;
          case 'oversized':
            assert.equal(answer.status, 413);
            assert.equal(body.error, `the review is larger than ${LIMIT} bytes`);
        }
      }),
      { numRuns: 1000 },
    );
  });
});
