/**
 * `causeway conformance <url>`: holds any function service, in any language, to protocol v1 as the
 * gateway speaks it. Health and manifest in the protocol's shape; a round trip for every handler (and
 * every probe) in the manifest, signed by the gateway's own signer and read by its own validation;
 * the error model; and a refusal for every forged request (unsigned, wrong key, expired,
 * future-dated, too long-lived, other issuer, no id, other audience, other route, altered body,
 * replayed, oversized); for a service that takes sessions, the same round trip in a session and a
 * refusal for every forged session or call in one; for one that keeps indexes, a call naming them by
 * version before and after they were sent; for one that takes batches, a batch of calls.
 */
import { createPublicKey, generateKeyPairSync, type KeyObject, randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { SignJWT } from 'jose';
import { Agent, request } from 'undici';
import {
  bodyDigest,
  HANDLER_KINDS,
  type HandlerSpec,
  type InvocationRequest,
  ISSUER,
  isAdmissionKind,
  KEY_ALGORITHM,
  type Manifest,
  PATHS,
  PROTOCOL,
  type Reason,
  SESSION_HEADER,
  SESSION_KEY_BYTES,
  SESSION_TYPE,
} from '../../protocol/index.ts';
import { activityRequest, invocationRequest } from '../dispatch/invocation.ts';
import { hmacSigner, keySigner, type Proof, type Signer, type SigningKey } from '../dispatch/signer.ts';
import {
  batchAnswers,
  parseActivityResponse,
  parseHealth,
  parseInvocationResponse,
  parseManifest,
} from '../dispatch/validation.ts';

export interface ConformanceTarget {
  /** The service's base URL. */
  url: string;
  /** The name it must answer to. */
  name: string;
  /** What the service trusts: a secret it shares with the gateway, or one of the gateway's keys. */
  signing: { secret: Uint8Array } | { key: SigningKey };
  /** PEM of a CA to trust for https. */
  ca?: string;
}

export interface CheckResult {
  name: string;
  /** Why it failed; undefined when it passed. */
  failure?: string;
}

interface Answer {
  status: number;
  body: unknown;
}

/** A body no service may take: over the 16 MiB the SDK takes by default, said in its length. */
const OVERSIZED_BYTES = 64 * 1024 * 1024;

class Failure extends Error {}

function expect(condition: unknown, failure: string): asserts condition {
  if (!condition) throw new Failure(failure);
}

/** Runs every check against the service, in order; a failed one does not stop the others. */
export async function runConformance(target: ConformanceTarget): Promise<CheckResult[]> {
  const client = new Client(target);
  const results: CheckResult[] = [];
  const check = async (name: string, run: () => Promise<void>) => {
    try {
      await run();
      results.push({ name });
    } catch (error) {
      results.push({ name, failure: error instanceof Error ? error.message : String(error) });
    }
  };

  await check(
    'health: unsigned GET answers 200 with its status, the protocol and the expected name',
    async () => {
      const answer = await client.send('GET', PATHS.health, { proof: null });
      expect(answer.status === 200, `status ${answer.status}, not 200`);
      const health = parseHealth(answer.body);
      expect(health.name === target.name, `it calls itself "${health.name}", not "${target.name}"`);
    },
  );

  let manifest: Manifest | undefined;
  await check('manifest: signed GET answers the protocol manifest, under the same name', async () => {
    const answer = await client.send('GET', PATHS.manifest);
    expect(answer.status === 200, `status ${answer.status}, not 200: ${JSON.stringify(answer.body)}`);
    const parsed = parseManifest(answer.body);
    expect(parsed.manifest.name === target.name, `the manifest names "${parsed.manifest.name}"`);
    expect(parsed.unknownKinds.length === 0, `unknown handler kinds: ${parsed.unknownKinds.join(', ')}`);
    manifest = parsed.manifest;
  });

  for (const handler of manifest?.handlers ?? []) {
    const reason = reasonFor(handler);
    await check(
      `invoke: ${handler.kind} handler "${handler.id}" (reason ${reason}) answers a valid outcome`,
      async () => {
        const invocation = sampleInvocation(handler, reason);
        const answer = await client.send('POST', PATHS.invoke, { body: invocation });
        expect(answer.status === 200, `status ${answer.status}, not 200: ${JSON.stringify(answer.body)}`);
        parseInvocationResponse(answer.body, [handler.id], reason === 'admission');
      },
    );
  }

  const reader = manifest?.indexVersions
    ? manifest.handlers.find((handler) => (handler.options?.indexes ?? []).length > 0)
    : undefined;
  if (reader) {
    await check(
      `indexes: "${reader.id}" named by versions never sent gets missingIndexes; sent whole, then by version, runs`,
      async () => {
        const reason = reasonFor(reader);
        const ids = reader.options?.indexes ?? [];
        const versions = Object.fromEntries(ids.map((id) => [id, `conformance.${crypto.randomUUID()}`]));
        const named = { ...sampleInvocation(reader, reason), indexVersions: versions };
        const missing = await client.send('POST', PATHS.invoke, { body: named });
        const said = (missing.body as { missingIndexes?: unknown })?.missingIndexes;
        expect(
          missing.status === 200 && Array.isArray(said) && ids.every((id) => said.includes(id)),
          `not {"missingIndexes": ${JSON.stringify(ids)}}: ${missing.status} ${JSON.stringify(missing.body)}`,
        );
        const whole = Object.fromEntries(ids.map((id) => [id, [['conformance', ['a']]]]));
        for (const call of [{ ...named, indexes: whole }, named]) {
          const answer = await client.send('POST', PATHS.invoke, { body: call });
          expect(answer.status === 200, `status ${answer.status}, not 200: ${JSON.stringify(answer.body)}`);
          parseInvocationResponse(answer.body, [reader.id], reason === 'admission');
        }
      },
    );
  }

  const batchable = manifest?.batches ? manifest.handlers.filter((handler) => handler.kind !== 'daemon') : [];
  if (batchable.length > 0) {
    await check(
      `batches: ${batchable.length} calls in one request (${batchable.map((handler) => handler.id).join(', ')}) answered each, in order`,
      async () => {
        const calls = batchable.map((handler) => sampleInvocation(handler, reasonFor(handler)));
        const answer = await client.send('POST', PATHS.invoke, {
          body: { protocol: PROTOCOL, batch: calls },
        });
        expect(answer.status === 200, `status ${answer.status}, not 200: ${JSON.stringify(answer.body)}`);
        const answers = batchAnswers(answer.body, calls.length);
        for (const [position, handler] of batchable.entries())
          parseInvocationResponse(answers[position], [handler.id], isAdmissionKind(handler.kind));
      },
    );
  }

  // Startup, cleanup and login handlers act (or hand out credentials): only probes, meant to be asked
  // at any time, are called here.
  for (const activity of (manifest?.activities ?? []).filter(({ kind }) => kind === 'probe')) {
    await check(
      `invoke: probe "${activity.id}" (an activity, about no object) answers a valid outcome`,
      async () => {
        const due = { id: activity.id, retry: 0, started: new Date().toISOString() };
        const answer = await client.send('POST', PATHS.invoke, {
          body: activityRequest('probe', [due], 30_000, {}),
        });
        expect(answer.status === 200, `status ${answer.status}, not 200: ${JSON.stringify(answer.body)}`);
        parseActivityResponse(answer.body, [activity.id]);
      },
    );
  }

  await check('errors: a signed invocation that is not one gets 400 with an error', async () => {
    const answer = await client.send('POST', PATHS.invoke, { body: { protocol: PROTOCOL } });
    expectError(answer, 400);
  });
  await check('errors: an unknown path gets 404 with an error', async () => {
    expectError(await client.send('GET', '/causeway/v1/no-such-path'), 404);
  });

  type Refusal = [string, () => Promise<Answer>];
  const refusals: Refusal[] = [
    ['unsigned', () => client.send('GET', PATHS.manifest, { proof: null })],
    ['signed with another secret or key', () => client.forged({ otherKey: true })],
    ...('key' in target.signing
      ? [['signed with HS256 over the public key', () => client.forged({ confused: true })] as Refusal]
      : []),
    ['expired', () => client.forged({ iat: now() - 120, exp: now() - 90 })],
    ['issued in the future', () => client.forged({ iat: now() + 30, exp: now() + 60 })],
    ['living longer than 60 s', () => client.forged({ iat: now(), exp: now() + 600 })],
    ['from another issuer', () => client.forged({ issuer: 'not-the-gateway' })],
    ['without a token id', () => client.forged({ jti: false })],
    ['for another audience', () => client.forged({ audience: `not-${target.name}` })],
    ['for another route', () => client.forged({ req: `GET ${PATHS.health}` })],
    ['with a body other than the signed one', () => client.tampered()],
  ];
  for (const [what, send] of refusals) {
    await check(`refuses a request ${what} with 401 and the reason`, async () =>
      expectError(await send(), 401),
    );
  }
  await check('refuses a replayed request with 401', async () => {
    const proof = client.proof('GET', PATHS.manifest, new Uint8Array());
    const first = await client.send('GET', PATHS.manifest, { proof });
    expect(first.status === 200, `the first use answered ${first.status}, not 200`);
    expectError(await client.send('GET', PATHS.manifest, { proof }), 401);
  });
  if (manifest?.sessions && 'key' in target.signing) await checkSessions(client, target.name, check);
  await check(`refuses a body of ${OVERSIZED_BYTES} bytes with 413, unread`, async () => {
    expectError(await client.oversized(), 413);
  });
  await client.close();
  return results;
}

/** A service that takes sessions: a call in one answers, and every forged session or call is refused. */
async function checkSessions(
  client: Client,
  name: string,
  check: (name: string, run: () => Promise<void>) => Promise<void>,
): Promise<void> {
  await check('sessions: a signed GET in a session answers the manifest', async () => {
    const answer = await client.send('GET', PATHS.manifest, { inSession: true });
    expect(answer.status === 200, `status ${answer.status}, not 200: ${JSON.stringify(answer.body)}`);
  });
  const refusals: Array<[string, Parameters<Client['forgedSession']>[0]]> = [
    ['in a session signed with another key', { otherKey: true }],
    ['in a session for another audience', { audience: `not-${name}` }],
    ['in an expired session', { iat: now() - 120, exp: now() - 90 }],
    ['in a session living longer than 60 s', { iat: now(), exp: now() + 600 }],
    ['in a session whose header does not say it is one', { type: 'JWT' }],
    ['in a session whose key is not 32 bytes', { keyBytes: 16 }],
    ["signed with another key than its session's", { otherCallKey: true }],
    ["in a session, with the session's token as its own", { sessionAsToken: true }],
  ];
  for (const [what, change] of refusals) {
    await check(`refuses a request ${what} with 401 and the reason`, async () =>
      expectError(await client.forgedSession(change), 401),
    );
  }
  await check('refuses a replayed request in a session with 401', async () => {
    const proof = client.proof('GET', PATHS.manifest, new Uint8Array(), true);
    const first = await client.send('GET', PATHS.manifest, { proof });
    expect(first.status === 200, `the first use answered ${first.status}, not 200`);
    expectError(await client.send('GET', PATHS.manifest, { proof }), 401);
  });
  await check('refuses a request in a session with a body other than the signed one', async () =>
    expectError(await client.tampered(true), 401),
  );
}

function expectError(answer: Answer, status: number): void {
  expect(answer.status === status, `status ${answer.status}, not ${status}: ${JSON.stringify(answer.body)}`);
  const body = answer.body as { protocol?: unknown; error?: unknown } | undefined;
  expect(
    body?.protocol === PROTOCOL && typeof body.error === 'string' && body.error.length > 0,
    `the body is not an error of the protocol ({"protocol":"${PROTOCOL}","error":"..."}): ${JSON.stringify(body)}`,
  );
}

const now = () => Math.floor(Date.now() / 1000);

/** A reason that calls the handler: its kind's first. */
function reasonFor(handler: HandlerSpec): Reason {
  return HANDLER_KINDS[handler.kind].reasons[0] as Reason;
}

/** One object of the handler's resource, and the call a gateway would make for it. */
function sampleInvocation(handler: HandlerSpec, reason: Reason): InvocationRequest {
  const { name, group = 'conformance.causeway.dev', version = 'v1' } = handler.resource;
  // A handler by category, or for every resource (`*`), is called about a made-up one.
  const named = name?.split('.')[0];
  const plural = named && named !== '*' ? named : 'conformancesamples';
  const kind = plural.replace(/s$/, '').replace(/^./, (first) => first.toUpperCase());
  const object = {
    apiVersion: group ? `${group}/${version}` : version,
    kind,
    metadata: { name: 'conformance-1', namespace: 'default', uid: '00000000-0000-4000-8000-000000000001' },
    spec: {},
  };
  const update = reason === 'update' || handler.kind === 'field';
  const due = {
    id: handler.id,
    retry: 0,
    started: new Date().toISOString(),
    idempotencyKey: 'conformance-1',
    ...(update
      ? {
          old: { spec: {} },
          new: { spec: { changed: true } },
          diff: [['add', ['spec', 'changed'], null, true]],
        }
      : {}),
  };
  const invocation = invocationRequest(
    reason,
    { group, version, plural, kind, namespaced: true },
    object,
    [due as InvocationRequest['handlers'][number]],
    30_000,
  );
  if (reason === 'event') return { ...invocation, event: 'ADDED' };
  if (reason !== 'admission' || !isAdmissionKind(handler.kind)) return invocation;
  return {
    ...invocation,
    admission: {
      uid: 'conformance-review-1',
      operation: 'CREATE',
      dryRun: true,
      userInfo: { username: 'conformance' },
    },
  };
}

/** Requests to the service, signed as the gateway signs them, or forged on purpose. */
class Client {
  readonly #target: ConformanceTarget;
  readonly #sign: Signer;
  readonly #dispatcher: Agent | undefined;

  constructor(target: ConformanceTarget) {
    this.#target = target;
    const { signing } = target;
    this.#sign = 'secret' in signing ? hmacSigner(signing.secret) : keySigner(() => signing.key);
    this.#dispatcher = target.ca ? new Agent({ connect: { ca: target.ca } }) : undefined;
  }

  close(): Promise<void> {
    return this.#dispatcher?.close() ?? Promise.resolve();
  }

  proof(method: 'GET' | 'POST', path: string, body: Uint8Array, inSession = false): Proof {
    return this.#sign({ audience: this.#target.name, method, path, body }, inSession);
  }

  /** `proof: null` sends none; undefined signs the request (in a session, with `inSession`). */
  async send(
    method: 'GET' | 'POST',
    path: string,
    options: { body?: unknown; proof?: Proof | null; rawBody?: Uint8Array; inSession?: boolean } = {},
  ): Promise<Answer> {
    const body =
      options.rawBody ??
      (options.body === undefined ? new Uint8Array() : encode(JSON.stringify(options.body)));
    const proof =
      options.proof === undefined ? this.proof(method, path, body, options.inSession) : options.proof;
    const response = await request(`${this.#target.url.replace(/\/+$/, '')}${path}`, {
      method,
      headers: {
        ...proof,
        ...(method === 'POST' ? { 'content-type': 'application/json' } : {}),
      },
      ...(method === 'POST' ? { body } : {}),
      ...this.#tls(),
    });
    return { status: response.statusCode, body: await jsonOr(response.body.text()) };
  }

  /** A signed GET of the manifest with one thing changed. */
  async forged(change: {
    /** Signed with another secret, or another key under the same key id. */
    otherKey?: boolean;
    /** HS256 keyed with the gateway's public key: what a service confusing algorithms would take. */
    confused?: boolean;
    iat?: number;
    exp?: number;
    issuer?: string;
    jti?: boolean;
    audience?: string;
    req?: string;
  }): Promise<Answer> {
    const iat = change.iat ?? now();
    const bsh = await bodyDigest(new Uint8Array()); // a GET's
    const { signing } = this.#target;
    const hmac = 'secret' in signing || change.confused;
    const kid = 'key' in signing ? signing.key.kid : undefined;
    const jwt = new SignJWT({ req: change.req ?? `GET ${PATHS.manifest}`, bsh })
      .setProtectedHeader({ alg: hmac ? 'HS256' : KEY_ALGORITHM, typ: 'JWT', ...(kid ? { kid } : {}) })
      .setIssuer(change.issuer ?? ISSUER)
      .setAudience(change.audience ?? this.#target.name)
      .setIssuedAt(iat)
      .setExpirationTime(change.exp ?? iat + 30);
    if (change.jti !== false) jwt.setJti(crypto.randomUUID());
    let key: Uint8Array | KeyObject;
    if ('secret' in signing)
      key = change.otherKey ? encode('not the secret of this service, 32+ bytes') : signing.secret;
    else if (change.confused)
      key = createPublicKey(signing.key.privateKey).export({ format: 'der', type: 'spki' });
    else key = change.otherKey ? generateKeyPairSync('ed25519').privateKey : signing.key.privateKey;
    return this.send('GET', PATHS.manifest, { proof: { authorization: `Bearer ${await jwt.sign(key)}` } });
  }

  /** A GET of the manifest in a session, with one thing of the session or of the call changed. */
  async forgedSession(change: {
    otherKey?: boolean;
    audience?: string;
    iat?: number;
    exp?: number;
    type?: string;
    keyBytes?: number;
    /** The call signed with a key other than the session's. */
    otherCallKey?: boolean;
    /** The session's own token sent as the call's. */
    sessionAsToken?: boolean;
  }): Promise<Answer> {
    const { signing } = this.#target;
    if (!('key' in signing)) throw new Failure('sessions are for services that check public keys');
    const iat = change.iat ?? now();
    const secret = randomBytes(change.keyBytes ?? SESSION_KEY_BYTES);
    const session = await new SignJWT({ key: secret.toString('base64url') })
      .setProtectedHeader({ alg: KEY_ALGORITHM, typ: change.type ?? SESSION_TYPE, kid: signing.key.kid })
      .setIssuer(ISSUER)
      .setAudience(change.audience ?? this.#target.name)
      .setIssuedAt(iat)
      .setExpirationTime(change.exp ?? iat + 60)
      .sign(change.otherKey ? generateKeyPairSync('ed25519').privateKey : signing.key.privateKey);
    const call = await new SignJWT({ req: `GET ${PATHS.manifest}`, bsh: await bodyDigest(new Uint8Array()) })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setIssuer(ISSUER)
      .setAudience(this.#target.name)
      .setIssuedAt(now())
      .setExpirationTime(now() + 30)
      .setJti(crypto.randomUUID())
      .sign(change.otherCallKey ? randomBytes(SESSION_KEY_BYTES) : secret);
    const token = change.sessionAsToken ? session : call;
    return this.send('GET', PATHS.manifest, {
      proof: { authorization: `Bearer ${token}`, [SESSION_HEADER]: session },
    });
  }

  /** A genuine invocation's proof (in a session, with `inSession`) with another body. */
  tampered(inSession = false): Promise<Answer> {
    const signed = encode(JSON.stringify({ protocol: PROTOCOL, signed: true }));
    const proof = this.proof('POST', PATHS.invoke, signed, inSession);
    return this.send('POST', PATHS.invoke, {
      proof,
      rawBody: encode(JSON.stringify({ protocol: PROTOCOL, signed: false })),
    });
  }

  /** A length over any limit, said in the header: a service answers before reading it. */
  async oversized(): Promise<Answer> {
    const stop = new AbortController();
    const response = await request(`${this.#target.url.replace(/\/+$/, '')}${PATHS.invoke}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-length': String(OVERSIZED_BYTES) },
      // A first chunk, and then nothing: the rest never needs to be sent.
      body: Readable.from(
        (async function* () {
          yield encode('{"protocol":');
          await new Promise((resolve) => stop.signal.addEventListener('abort', resolve));
        })(),
      ),
      signal: stop.signal,
      ...this.#tls(),
    });
    const answer = { status: response.statusCode, body: await jsonOr(response.body.text()) };
    stop.abort();
    return answer;
  }

  #tls() {
    return this.#dispatcher ? { dispatcher: this.#dispatcher } : {};
  }
}

const encode = (text: string) => new TextEncoder().encode(text);

async function jsonOr(text: Promise<string>): Promise<unknown> {
  const raw = await text;
  try {
    return JSON.parse(raw);
  } catch {
    return raw;
  }
}
