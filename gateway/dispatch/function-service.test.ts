/** A function service in the gateway's process: asked directly, with the same checks and deadlines. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AdmissionError, type Index, operator } from '../../functions/index.ts';
import { KOPF_EXAMPLES } from '../../functions/test-helpers.ts';
import type { IndexContents } from '../../protocol/index.ts';
import { deepFreeze } from '../../protocol/json.ts';
import { DEFAULT_IDENTITY } from '../identity.ts';
import { createLogger } from '../logging.ts';
import { callServices } from './calls.ts';
import { FunctionService, ServiceError } from './function-service.ts';
import { invocationRequest } from './invocation.ts';
import { newKey, publicKeys, signingKeyOf } from './keys.ts';
import { hmacSigner, keySigner } from './signer.ts';
import { type FetchHandler, inProcessTransport } from './transport.ts';
import { ProtocolError } from './validation.ts';

const SECRET = new TextEncoder().encode('a secret of at least thirty-two bytes, for the test');
const resource = KOPF_EXAMPLES;
const object = {
  apiVersion: 'kopf.dev/v1',
  kind: 'KopfExample',
  metadata: { name: 'a', namespace: 'ns', uid: 'u' },
  spec: { a: 1 },
};
const due = (id: string) => ({ id, retry: 0, started: new Date().toISOString(), idempotencyKey: `k-${id}` });

function counted() {
  const op = operator({ name: 'direct', secret: SECRET });
  op.on.create('kopfexamples', function create_fn({ spec }) {
    return { seen: spec.a };
  });
  op.on.create('kopfexamples', function never() {
    return new Promise(() => {});
  });
  let fetches = 0;
  const handler = Object.assign(Object.create(op), {
    fetch: (request: Request) => {
      fetches++;
      return op.fetch(request);
    },
  });
  return { handler, fetches: () => fetches };
}

describe('a function service in the same process', () => {
  it('is asked directly: no HTTP request, and the answer is checked as any other', async () => {
    const { handler, fetches } = counted();
    const service = await FunctionService.connect({
      transport: inProcessTransport(handler),
      name: undefined,
      sign: hmacSigner(SECRET),
    });
    assert.deepEqual(
      service.manifest.handlers.map((spec) => spec.id),
      ['create_fn', 'never'],
    );
    const request = invocationRequest('create', resource, object, [due('create_fn')], 5000);
    const response = await service.invoke(request);
    assert.deepEqual(response.outcomes.create_fn, { status: 'success', result: { seen: 1 } });
    assert.equal(fetches(), 0);
    assert.equal(Object.isFrozen(request.body), false, "the gateway's object is left as it was");
  });

  it('is given up at the deadline', async () => {
    const { handler } = counted();
    const service = await FunctionService.connect({
      transport: inProcessTransport(handler),
      name: undefined,
      sign: hmacSigner(SECRET),
    });
    await assert.rejects(
      service.invoke(invocationRequest('create', resource, object, [due('never')], 50), 50),
      /no answer within 50 ms/,
    );
  });

  it('refuses a request the operator cannot act on, as it would over HTTP', async () => {
    const { handler } = counted();
    const service = await FunctionService.connect({
      transport: inProcessTransport(handler),
      name: undefined,
      sign: hmacSigner(SECRET),
    });
    await assert.rejects(
      service.invoke(invocationRequest('create', resource, object, [due('missing')], 5000)),
      /no handler "missing" here/,
    );
  });
});

describe('a service redeployed without handlers it is called for', () => {
  for (const [how, transport] of [
    [
      'over its fetch handler',
      (op: FetchHandler) => inProcessTransport({ fetch: (request) => op.fetch(request) }),
    ],
    ['in this process', (op: FetchHandler) => inProcessTransport(op)],
  ] as const) {
    it(`says which, and that its manifest is to be read again: ${how}`, async () => {
      let redeployed = 0;
      const service = await FunctionService.connect({
        transport: transport(counted().handler),
        name: undefined,
        sign: hmacSigner(SECRET),
        redeployed: () => redeployed++,
      });
      const call = invocationRequest('create', resource, object, [due('create_fn'), due('gone')], 5000);
      const failed = await service.invoke(call).then(
        () => assert.fail('answered'),
        (error: unknown) => error,
      );
      assert.ok(failed instanceof ServiceError);
      assert.deepEqual(failed.missingHandlers, ['gone']);
      assert.equal(redeployed, 1);
      const [answer] = await callServices(
        [{ service, handlers: [due('create_fn'), due('gone')] }],
        {
          reason: 'create',
          resource,
          object,
        },
        [1],
        createLogger({ level: 'error' }),
      );
      assert.deepEqual(answer?.gone, ['gone'], 'only those it lacks are gone; the others are retried');
      assert.equal(answer?.outcomes.create_fn?.status, 'temporary');
    });
  }
});

describe("what a call's answer may not do to another service's state", () => {
  /** A service whose create_fn keeps `size` bytes in the memo and patches `status.<patched>`. */
  async function answering(size: number, patched: string) {
    const op = operator({ name: 'neighbour', secret: SECRET });
    op.on.create('kopfexamples', function create_fn({ memo, patch }) {
      memo.kept = 'x'.repeat(size);
      patch.status = { [patched]: 'set' };
      return 'done';
    });
    return FunctionService.connect({
      transport: inProcessTransport(op),
      name: undefined,
      sign: hmacSigner(SECRET),
      guard: {
        identity: DEFAULT_IDENTITY,
        resourceOf: async () => assert.fail('the answer applies nothing'),
        current: async () => assert.fail('the answer applies nothing'),
      },
    });
  }
  const subject = (memo: Record<string, unknown>) => ({
    reason: 'create' as const,
    resource,
    object,
    memoOf: (name: string) => (name === 'neighbour' ? memo : assert.fail(`asked for the memo of ${name}`)),
    othersResults: () => new Set(['theirs_fn']),
  });
  const quiet = createLogger({ level: 'error' });

  it('fails the call whose memo updates would pass 64 KiB for the object: retried, nothing of it kept', async () => {
    const service = await answering(64 * 1024, 'mine');
    const [answer] = await callServices([{ service, handlers: [due('create_fn')] }], subject({}), [1], quiet);
    assert.equal(answer?.outcomes.create_fn?.status, 'temporary');
    assert.match(
      String((answer?.outcomes.create_fn as { message?: string } | undefined)?.message),
      /the memo of "neighbour" for the object would be \d+ bytes, over the 65536 a service may keep per object/,
    );
    assert.equal(answer?.memo, undefined);
    const small = await answering(10, 'mine');
    const [kept] = await callServices(
      [{ service: small, handlers: [due('create_fn')] }],
      subject({}),
      [1],
      quiet,
    );
    assert.deepEqual([kept?.outcomes.create_fn?.status, kept?.memo], ['success', { kept: 'x'.repeat(10) }]);
  });

  it("fails the call whose patch sets another service's result, with the reason", async () => {
    const service = await answering(10, 'theirs_fn');
    const [answer] = await callServices([{ service, handlers: [due('create_fn')] }], subject({}), [1], quiet);
    assert.equal(answer?.outcomes.create_fn?.status, 'temporary');
    assert.match(
      String((answer?.outcomes.create_fn as { message?: string } | undefined)?.message),
      /handler "create_fn": its patch may not change status\.theirs_fn \(another service's result\)/,
    );
    assert.equal(answer?.memo, undefined, 'nothing of the answer is kept');
  });
});

describe("the signatures on a service's calls", () => {
  /** A service checking the gateway's public keys, reached through its fetch handler; `sessions: false` hides that it takes them. */
  function recorded(sessions: boolean) {
    const stored = newKey(Date.now());
    const op = operator({ name: 'signed', keys: publicKeys([stored]) });
    op.on.create('kopfexamples', function create_fn() {
      return 'done';
    });
    const seen: Array<{ path: string; algorithm: string; session: string | null }> = [];
    const handler = {
      fetch: async (request: Request) => {
        const token = request.headers.get('authorization')?.slice('Bearer '.length);
        if (!token) return op.fetch(request); // the health check
        const header = JSON.parse(Buffer.from(token.split('.')[0] ?? '', 'base64url').toString());
        seen.push({
          path: new URL(request.url).pathname,
          algorithm: header.alg,
          session: request.headers.get('causeway-session'),
        });
        const response = await op.fetch(request);
        if (sessions || !request.url.endsWith('/manifest')) return response;
        const { sessions: _, ...manifest } = (await response.json()) as Record<string, unknown>;
        return Response.json(manifest);
      },
    };
    const sign = keySigner(() => signingKeyOf(stored));
    return { handler, sign, seen };
  }

  it('are HS256 in one session, signed EdDSA, where the service takes sessions', async () => {
    const { handler, sign, seen } = recorded(true);
    const service = await FunctionService.connect({
      transport: inProcessTransport(handler),
      name: 'signed',
      sign,
    });
    const request = () => invocationRequest('create', resource, object, [due('create_fn')], 5000);
    for (let call = 0; call < 2; call++) {
      assert.deepEqual((await service.invoke(request())).outcomes.create_fn, {
        status: 'success',
        result: 'done',
      });
    }
    assert.deepEqual(
      seen.map(({ path, algorithm, session }) => [path, algorithm, session !== null]),
      [
        ['/causeway/v1/manifest', 'EdDSA', false],
        ['/causeway/v1/invoke', 'HS256', true],
        ['/causeway/v1/invoke', 'HS256', true],
      ],
    );
    assert.equal(seen[1]?.session, seen[2]?.session, 'one session for both calls');
  });

  it('are EdDSA each where the service does not say it takes sessions', async () => {
    const { handler, sign, seen } = recorded(false);
    const service = await FunctionService.connect({
      transport: inProcessTransport(handler),
      name: 'signed',
      sign,
    });
    const request = invocationRequest('create', resource, object, [due('create_fn')], 5000);
    assert.deepEqual((await service.invoke(request)).outcomes.create_fn, {
      status: 'success',
      result: 'done',
    });
    assert.deepEqual(
      seen.map(({ algorithm, session }) => [algorithm, session]),
      [
        ['EdDSA', null],
        ['EdDSA', null],
      ],
    );
  });
});

describe('a reply holding a key that reaches a prototype', () => {
  it('is refused from a service in this process too, asked directly', async () => {
    const op = operator({ name: 'direct', secret: SECRET });
    op.on.create('kopfexamples', function create_fn({ patch }) {
      Object.assign(patch, JSON.parse('{"spec":{"__proto__":{"polluted":true}}}'));
    });
    const service = await FunctionService.connect({
      transport: inProcessTransport(op),
      name: undefined,
      sign: hmacSigner(SECRET),
    });
    await assert.rejects(
      service.invoke(invocationRequest('create', resource, object, [due('create_fn')], 5000)),
      new ProtocolError(
        `response.outcomes.create_fn.patch.spec.__proto__: a reply may not hold the key "__proto__", which reaches an object's prototype`,
      ),
    );
  });
});

describe('the indexes a call carries', () => {
  /** A service whose handler reads an index: `seen` by the handler; `sent`, which index fields each request had. */
  function readingOperator(seen: Index[]) {
    const op = operator({ name: 'direct', secret: SECRET });
    op.index('kopfexamples', function names({ name }) {
      return name;
    });
    op.on.create('kopfexamples', { indexes: ['names'] }, function reader({ indexes }) {
      seen.push(indexes.names as Index);
    });
    return op;
  }

  /** The service, and a source giving the frozen contents the gateway keeps. */
  async function reading(direct: boolean, batches = false) {
    const seen: Index[] = [];
    const sent: string[][] = [];
    /** Each request's calls: what of the indexes each carries. */
    const requests: string[][][] = [];
    const replica = { op: readingOperator(seen) };
    const indexKeys = (call: object) => Object.keys(call).filter((key) => key.startsWith('index'));
    const overHttp = {
      fetch: async (request: Request) => {
        const body =
          request.method === 'POST' ? ((await request.clone().json()) as { batch?: object[] }) : {};
        if (request.method === 'POST') {
          sent.push(indexKeys(body));
          requests.push((body.batch ?? [body]).map(indexKeys));
        }
        return replica.op.fetch(request);
      },
    };
    const source = { contents: deepFreeze<IndexContents>([[null, ['a', 'b']]]) };
    const service = await FunctionService.connect({
      transport: inProcessTransport(direct ? replica.op : overHttp),
      name: undefined,
      sign: hmacSigner(SECRET),
      indexes: { contents: async () => ({ names: source.contents as IndexContents }) },
      ...(batches ? { batches: { calls: 64, bytes: 1024 * 1024 } } : {}),
    });
    const call = async () => {
      const response = await service.invoke(
        invocationRequest('create', resource, object, [due('reader')], 5000),
      );
      assert.deepEqual(response.outcomes.reader, { status: 'success' });
    };
    /** The service started again: it keeps nothing it was sent before. */
    const restart = () => {
      replica.op = readingOperator(seen);
    };
    return { seen, sent, requests, source, call, restart };
  }

  it('are shared with a service in this process, read-only: the same map until the index changes', async () => {
    const { seen, source, call } = await reading(true);
    await call();
    await call();
    source.contents = deepFreeze<IndexContents>([[null, ['a']]]);
    await call();
    assert.deepEqual(
      seen.map((index) => [...index]),
      [[[null, ['a', 'b']]], [[null, ['a', 'b']]], [[null, ['a']]]],
    );
    assert.equal(seen[0], seen[1], 'the same map while the index is unchanged');
    assert.notEqual(seen[1], seen[2]);
    assert.throws(() => (seen[0] as Map<string | null, unknown[]>).set('c', []), /an index is read-only/);
    assert.throws(() => (seen[0] as Map<string | null, unknown[]>).delete(null), /an index is read-only/);
    assert.deepEqual([...(seen[0] as Index)], [[null, ['a', 'b']]], 'left whole');
  });

  it('are sent over HTTP whole once per version to a service that keeps them, then named by version', async () => {
    const { seen, sent, source, call } = await reading(false);
    await call();
    await call();
    source.contents = deepFreeze<IndexContents>([[null, ['a']]]);
    await call();
    await call();
    assert.deepEqual(sent, [
      ['indexVersions', 'indexes'],
      ['indexVersions'],
      ['indexVersions', 'indexes'],
      ['indexVersions'],
    ]);
    assert.deepEqual(
      seen.map((index) => [...index]),
      [[[null, ['a', 'b']]], [[null, ['a', 'b']]], [[null, ['a']]], [[null, ['a']]]],
    );
  });

  it('go in batches once named by version only; a call the service misses is sent again alone, whole', async () => {
    const { seen, requests, call, restart } = await reading(false, true);
    await call();
    await Promise.all([call(), call()]);
    restart();
    await Promise.all([call(), call()]);
    assert.deepEqual(requests, [
      [['indexVersions', 'indexes']],
      [['indexVersions'], ['indexVersions']],
      [['indexVersions'], ['indexVersions']],
      [['indexVersions', 'indexes']],
      [['indexVersions', 'indexes']],
    ]);
    assert.equal(seen.length, 5, 'every call handled once, with its index');
    for (const index of seen) assert.deepEqual([...index], [[null, ['a', 'b']]]);
  });

  it('are sent again whole, in the same call, to a service that no longer has them', async () => {
    const { seen, sent, call, restart } = await reading(false);
    await call();
    restart();
    await call();
    await call();
    assert.deepEqual(sent, [
      ['indexVersions', 'indexes'],
      ['indexVersions'],
      ['indexVersions', 'indexes'],
      ['indexVersions'],
    ]);
    assert.deepEqual(
      seen.map((index) => [...index]),
      [[[null, ['a', 'b']]], [[null, ['a', 'b']]], [[null, ['a', 'b']]]],
      'every call handled once, with its index',
    );
  });
});

describe('calls made together', () => {
  /**
   * A service of causeway/functions reached through its fetch handler (as over HTTP: signed, in
   * JSON), each request's calls recorded; `batches: false` hides that it takes batches, `answer`
   * replaces what it answers to a batch.
   */
  function recorded({
    batches = true,
    answer,
  }: {
    batches?: boolean;
    answer?: (batch: unknown[]) => unknown;
  } = {}) {
    const op = operator({ name: 'batched', secret: SECRET });
    op.on.create('kopfexamples', function create_fn({ name }) {
      return `hello ${name}`;
    });
    op.on.create('kopfexamples', function other_fn() {
      return 'other';
    });
    op.on.validate('kopfexamples', function validate_fn({ name }) {
      if (name === 'bad') throw new AdmissionError('not this one');
    });
    const requests: string[][] = [];
    const handler = {
      fetch: async (request: Request) => {
        const path = new URL(request.url).pathname;
        if (path.endsWith('/invoke')) {
          const body = JSON.parse(await request.clone().text());
          const calls: { body: { metadata: { name: string } } }[] = body.batch ?? [body];
          requests.push(calls.map((call) => call.body.metadata.name));
          if (body.batch && answer) return Response.json(answer(body.batch));
        }
        const response = await op.fetch(request);
        if (batches || !path.endsWith('/manifest')) return response;
        const { batches: _, ...manifest } = (await response.json()) as Record<string, unknown>;
        return Response.json(manifest);
      },
    };
    const connected = FunctionService.connect({
      transport: inProcessTransport(handler),
      name: 'batched',
      sign: hmacSigner(SECRET),
      batches: { calls: 64, bytes: 1024 * 1024 },
    });
    const call = async (name: string, ids = ['create_fn']) => {
      const named = { ...object, metadata: { ...object.metadata, name, uid: name } };
      return (await connected).invoke(invocationRequest('create', resource, named, ids.map(due), 5000));
    };
    const review = async (name: string) => {
      const named = { ...object, metadata: { ...object.metadata, name, uid: name } };
      const request = invocationRequest('admission', resource, named, [due('validate_fn')], 5000);
      const admission = { uid: name, operation: 'CREATE' as const, dryRun: false, userInfo: {} };
      return (await connected).invoke({ ...request, admission });
    };
    return { requests, call, review };
  }

  it('reach a service that takes batches in one request, each answered on its own', async () => {
    const { requests, call } = recorded();
    const responses = await Promise.all(['a', 'b', 'c'].map((name) => call(name)));
    assert.deepEqual(
      responses.map((response) => response.outcomes.create_fn),
      ['a', 'b', 'c'].map((name) => ({ status: 'success', result: `hello ${name}` })),
    );
    await call('later');
    assert.deepEqual(
      requests,
      [['a', 'b', 'c'], ['later']],
      'a call of a later turn in a request of its own',
    );
  });

  it('reach a service that does not say it takes batches one request each', async () => {
    const { requests, call } = recorded({ batches: false });
    await Promise.all(['a', 'b'].map((name) => call(name)));
    assert.deepEqual(requests, [['a'], ['b']]);
  });

  it('go together only with calls of the same handlers', async () => {
    const { requests, call } = recorded();
    const both = ['create_fn', 'other_fn'];
    const responses = await Promise.all([call('a'), call('b', both), call('c'), call('d', both)]);
    assert.deepEqual(requests, [
      ['a', 'c'],
      ['b', 'd'],
    ]);
    assert.deepEqual(responses[1]?.outcomes.other_fn, { status: 'success', result: 'other' });
  });

  it('hold admission reviews arriving at once, each decided on its own', async () => {
    const { requests, review } = recorded();
    const responses = await Promise.all(['good', 'bad'].map(review));
    assert.deepEqual(requests, [['good', 'bad']]);
    assert.equal(responses[0]?.outcomes.validate_fn?.status, 'success');
    assert.deepEqual(responses[1]?.outcomes.validate_fn, {
      status: 'denied',
      message: 'not this one',
      code: 500,
    });
  });

  it('fail alone when the answer for one of them is malformed', async () => {
    const { call } = recorded({
      answer: (batch) => ({
        protocol: 'causeway.dev/v1',
        batch: batch.map((_, position) =>
          position === 1
            ? { protocol: 'causeway.dev/v1', outcomes: {}, logs: [] }
            : { protocol: 'causeway.dev/v1', outcomes: { create_fn: { status: 'success' } }, logs: [] },
        ),
      }),
    });
    const results = await Promise.allSettled(['a', 'b', 'c'].map((name) => call(name)));
    assert.deepEqual(
      results.map((result) => result.status),
      ['fulfilled', 'rejected', 'fulfilled'],
    );
    assert.match(String((results[1] as PromiseRejectedResult).reason), /create_fn/);
  });

  it('all fail, each with the reason, when the batch answer is not one for them', async () => {
    const { call } = recorded({ answer: () => ({ protocol: 'causeway.dev/v1', batch: [] }) });
    const results = await Promise.allSettled(['a', 'b'].map((name) => call(name)));
    for (const result of results) {
      assert.equal(result.status, 'rejected');
      assert.match(String(result.reason), /batch response must hold 2 responses/);
    }
  });
});
