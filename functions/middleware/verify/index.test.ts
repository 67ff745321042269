import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SignJWT } from 'jose';
import { bodyDigest, ISSUER, PATHS, PROTOCOL, signRequest } from '../../../protocol/index.ts';
import { operator } from '../../operator.ts';
import { invocation, SECRET, signed, signedInvoke, signedManifest } from '../../test-helpers.ts';

const AUDIENCE = 'kopfexample';
const BODY = JSON.stringify(invocation(['create_fn']));

function service() {
  const op = operator({ name: AUDIENCE, secret: SECRET });
  op.on.create('kopfexamples', function create_fn() {
    return 'created';
  });
  return op;
}

/**
 * A token as signRequest would make it, but for what is given: times (which signRequest always takes
 * from the clock), another issuer, or no id.
 */
async function forged({
  iat = now(),
  exp = now() + 30,
  issuer = ISSUER,
  jti = true,
}: {
  iat?: number;
  exp?: number;
  issuer?: string;
  jti?: boolean;
}): Promise<Request> {
  const jwt = new SignJWT({
    req: `POST ${PATHS.invoke}`,
    bsh: await bodyDigest(new TextEncoder().encode(BODY)),
  })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuer(issuer)
    .setAudience(AUDIENCE)
    .setIssuedAt(iat)
    .setExpirationTime(exp);
  if (jti) jwt.setJti(crypto.randomUUID());
  const token = await jwt.sign(new TextEncoder().encode(SECRET));
  return new Request(`http://functions.test${PATHS.invoke}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}` },
    body: BODY,
  });
}

async function assertRefused(response: Response, status: number, error: RegExp): Promise<void> {
  assert.equal(response.status, status);
  const answer = (await response.json()) as { protocol: string; error: string };
  assert.equal(answer.protocol, PROTOCOL);
  assert.match(answer.error, error);
}

const now = () => Math.floor(Date.now() / 1000);

describe('signed routes refuse', () => {
  it('unsigned requests', async () => {
    const op = service();
    await assertRefused(
      await op.fetch(new Request(`http://functions.test${PATHS.manifest}`)),
      401,
      /^unsigned request/,
    );
    const invoke = new Request(`http://functions.test${PATHS.invoke}`, { method: 'POST', body: BODY });
    await assertRefused(await op.fetch(invoke), 401, /^unsigned request/);
  });

  it('expired tokens', async () => {
    const response = await service().fetch(await forged({ iat: now() - 120, exp: now() - 90 }));
    await assertRefused(response, 401, /^token expired$/);
  });

  it('tokens that live longer than 60 s', async () => {
    const response = await service().fetch(await forged({ iat: now(), exp: now() + 120 }));
    await assertRefused(response, 401, /lifetime 120s exceeds the 60s limit/);
  });

  it('tokens issued in the future, or longer ago than a token may live', async () => {
    await assertRefused(
      await service().fetch(await forged({ iat: now() + 30, exp: now() + 60 })),
      401,
      /^token issued in the future: the clocks of gateway and service differ by more than 5s$/,
    );
    await assertRefused(
      await service().fetch(await forged({ iat: now() - 70, exp: now() + 10 })),
      401,
      /lifetime|issued more than 60s ago/,
    );
  });

  it('tokens of another issuer, or without an id', async () => {
    await assertRefused(
      await service().fetch(await forged({ issuer: 'someone-else' })),
      401,
      /^token is not from the gateway: its issuer is not "causeway-gateway"$/,
    );
    await assertRefused(
      await service().fetch(await forged({ jti: false })),
      401,
      /^token has no "jti" claim$/,
    );
  });

  it('tokens for another audience', async () => {
    const response = await service().fetch(await signedInvoke('other-service', invocation(['create_fn'])));
    await assertRefused(response, 401, /another audience, not "kopfexample"/);
  });

  it('tokens signed with another secret', async () => {
    const request = await signedManifest(AUDIENCE, 'another secret, also long enough for HS256');
    await assertRefused(await service().fetch(request), 401, /bad signature/);
  });

  it('tokens signed for another route', async () => {
    const manifestToken = (await signedManifest(AUDIENCE)).headers.get('authorization') ?? '';
    const request = new Request(`http://functions.test${PATHS.invoke}`, {
      method: 'POST',
      headers: { authorization: manifestToken },
      body: BODY,
    });
    await assertRefused(await service().fetch(request), 401, /signed for "GET \/causeway\/v1\/manifest"/);
  });

  it('a body other than the signed one', async () => {
    const genuine = await signed({ audience: AUDIENCE, path: PATHS.invoke, body: BODY });
    const tampered = new Request(genuine, { body: BODY.replace('kex-1', 'kex-2') });
    await assertRefused(await service().fetch(tampered), 401, /body does not match the signed digest/);
  });

  it('tokens signed for another method', async () => {
    const body = new TextEncoder().encode(BODY);
    const route = { audience: AUDIENCE, method: 'PUT', path: PATHS.invoke, body };
    const token = await signRequest(new TextEncoder().encode(SECRET), route);
    const request = new Request(`http://functions.test${PATHS.invoke}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}` },
      body: BODY,
    });
    await assertRefused(await service().fetch(request), 401, /signed for "PUT \/causeway\/v1\/invoke"/);
  });

  it('a token used a second time', async () => {
    const op = service();
    const request = await signedInvoke(AUDIENCE, invocation(['create_fn']));
    const replay = request.clone();
    assert.equal((await op.fetch(request)).status, 200);
    await assertRefused(await op.fetch(replay), 401, /already used/);
  });
});

describe('without keys or a secret', () => {
  it('refuses to serve signed routes, saying what to configure, but still answers the health check', async (t) => {
    const op = operator({ name: AUDIENCE });
    const saved = process.env.CAUSEWAY_SECRET;
    delete process.env.CAUSEWAY_SECRET;
    t.after(() => {
      if (saved !== undefined) process.env.CAUSEWAY_SECRET = saved;
    });
    await assertRefused(
      await op.fetch(await signedManifest(AUDIENCE)),
      500,
      /^no keys to verify requests with: set CAUSEWAY_JWKS \(the gateway's public keys\), CAUSEWAY_JWKS_URL or CAUSEWAY_SECRET$/,
    );
    const health = await op.fetch(new Request(`http://functions.test${PATHS.health}`));
    assert.equal(health.status, 200);
  });
});

describe('bodies over the limit', () => {
  const small = () => {
    const op = operator({ name: AUDIENCE, secret: SECRET, maxBodyBytes: 1024 });
    op.on.create('kopfexamples', function create_fn() {});
    return op;
  };
  const big = JSON.stringify(invocation(['create_fn'], {}, { memo: { blob: 'x'.repeat(4096) } }));

  it('are refused with 413 unread when their length says so, signed or not', async () => {
    const length = { 'content-length': String(new TextEncoder().encode(big).byteLength) };
    const genuine = await signed({ audience: AUDIENCE, path: PATHS.invoke, body: big });
    const request = new Request(genuine, { headers: { ...Object.fromEntries(genuine.headers), ...length } });
    await assertRefused(await small().fetch(request), 413, /^the body is larger than 1024 bytes$/);
    const unsigned = new Request(`http://functions.test${PATHS.invoke}`, {
      method: 'POST',
      headers: length,
      body: big,
    });
    await assertRefused(await small().fetch(unsigned), 413, /larger than 1024 bytes/);
  });

  it('are refused with 413 once they grow over it, when no length is said', async () => {
    const genuine = await signed({ audience: AUDIENCE, path: PATHS.invoke, body: big });
    const chunks = new TextEncoder().encode(big);
    let pulled = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (pulled >= chunks.length) return controller.close();
        controller.enqueue(chunks.slice(pulled, pulled + 256));
        pulled += 256;
      },
    });
    const request = new Request(genuine.url, {
      method: 'POST',
      headers: genuine.headers,
      body: stream,
      duplex: 'half',
    } as RequestInit);
    assert.equal(request.headers.get('content-length'), null);
    await assertRefused(await small().fetch(request), 413, /larger than 1024 bytes/);
    assert.ok(pulled < chunks.length, `read ${pulled} of ${chunks.length} bytes: it stopped at the limit`);
  });

  it('are not read at all for a request nobody signed', async () => {
    let pulled = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        pulled++;
        controller.enqueue(new Uint8Array(256));
      },
    });
    const request = new Request(`http://functions.test${PATHS.invoke}`, {
      method: 'POST',
      body: stream,
      duplex: 'half',
    } as RequestInit);
    await assertRefused(await small().fetch(request), 401, /^unsigned request/);
    assert.ok(pulled <= 1, 'the body was not read');
  });
});

describe('a replay store shared by replicas', () => {
  it('refuses at one replica a token admitted at another', async () => {
    const seen = new Set<string>();
    const replays = { admit: async (jti: string) => !seen.has(jti) && Boolean(seen.add(jti)) };
    const replica = () => {
      const op = operator({ name: AUDIENCE, secret: SECRET, replays });
      op.on.create('kopfexamples', function create_fn() {});
      return op;
    };
    const request = await signedInvoke(AUDIENCE, invocation(['create_fn']));
    const replay = request.clone();
    assert.equal((await replica().fetch(request)).status, 200);
    await assertRefused(await replica().fetch(replay), 401, /already used/);
    assert.equal(seen.size, 1);
  });
});
