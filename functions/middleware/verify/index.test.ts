import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SignJWT } from 'jose';
import { bodyDigest, ISSUER, PATHS, PROTOCOL } from '../../../protocol/index.ts';
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

/** A token as signRequest would make it, except for the times, which signRequest always takes from the clock. */
async function forged({ iat, exp }: { iat: number; exp: number }): Promise<Request> {
  const token = await new SignJWT({
    req: `POST ${PATHS.invoke}`,
    bsh: await bodyDigest(new TextEncoder().encode(BODY)),
  })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuer(ISSUER)
    .setAudience(AUDIENCE)
    .setIssuedAt(iat)
    .setExpirationTime(exp)
    .setJti(crypto.randomUUID())
    .sign(new TextEncoder().encode(SECRET));
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

  it('a token used a second time', async () => {
    const op = service();
    const request = await signedInvoke(AUDIENCE, invocation(['create_fn']));
    const replay = request.clone();
    assert.equal((await op.fetch(request)).status, 200);
    await assertRefused(await op.fetch(replay), 401, /already used/);
  });
});

describe('without a secret', () => {
  it('refuses to serve signed routes but still answers the health check', async (t) => {
    const op = operator({ name: AUDIENCE });
    const saved = process.env.CAUSEWAY_SECRET;
    delete process.env.CAUSEWAY_SECRET;
    t.after(() => {
      if (saved !== undefined) process.env.CAUSEWAY_SECRET = saved;
    });
    await assertRefused(
      await op.fetch(await signedManifest(AUDIENCE)),
      500,
      /^no signing secret configured: set CAUSEWAY_SECRET$/,
    );
    const health = await op.fetch(new Request(`http://functions.test${PATHS.health}`));
    assert.equal(health.status, 200);
  });
});
