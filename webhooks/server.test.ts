import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { describe, it, type TestContext } from 'node:test';
import { connect } from 'node:tls';
import { Agent, fetch } from 'undici';
import { renewCertificates } from './certificates.ts';
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

  it('refuses a chunked review (no length said) once it grows over the limit, and the connection serves on', async (t) => {
    const decided: string[] = [];
    const decide = async (request: { uid: string }) => {
      decided.push(request.uid);
      return { allowed: true };
    };
    const { post } = await serve(t, decide, {
      bodyLimitBytes: 1024,
    });
    const big = review('CREATE', { spec: { blob: 'x'.repeat(64 * 1024) } });
    const chunked = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let at = 0; at < big.length; at += 512)
          controller.enqueue(new TextEncoder().encode(big.slice(at, at + 512)));
        controller.close();
      },
    });
    const refused = await post('/v', chunked);
    assert.equal(refused.status, 413);
    assert.deepEqual(await refused.json(), { error: 'the review is larger than 1024 bytes' });
    assert.equal((await post('/v', review())).status, 200);
    assert.deepEqual(decided, ['review-1'], 'only the review within the limit was decided');
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

  it('answers only clients with a certificate from the given CA, when given one', async (t) => {
    const { post } = await serve(t, async () => ({ allowed: true }), { clientCa: certificates.ca.cert });
    await assert.rejects(post('/v', review()), /fetch failed/);
  });
});
