import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  type InvocationBatch,
  type InvocationResponse,
  type Manifest,
  OBSERVED,
  PATHS,
  PROTOCOL,
} from '../protocol/index.ts';
import { type HandlerContext, PRESENT } from './index.ts';
import { operator } from './operator.ts';
import { invocation, SECRET, signed, signedInvoke, signedManifest } from './test-helpers.ts';

function example() {
  const op = operator({ name: 'kopfexample', secret: SECRET });
  op.on.create('kopfexamples', async function create_fn({ name, logger }) {
    logger.info(`creating ${name}`);
    return { message: `hello ${name}` };
  });
  op.on.create({ group: 'apps', version: 'v1', name: 'deployments' }, { id: 'watch-deployments' }, () => {});
  return op;
}

describe('operator', () => {
  it('refuses names that are not DNS-1123 labels', () => {
    for (const name of ['', 'Kopf', 'kopf_example', '-kopf', 'kopf-', 'a'.repeat(64), undefined]) {
      assert.throws(() => operator({ name } as never), /must be a DNS-1123 label/, String(name));
    }
    assert.equal(operator({ name: 'a'.repeat(63) }).name, 'a'.repeat(63));
  });

  it('refuses an explicit secret that is too short, at once', () => {
    assert.throws(() => operator({ name: 'kopfexample', secret: 'short' }), /at least 32 bytes/);
  });

  it('answers the health check unsigned, naming the audience to sign for', async () => {
    const response = await example().fetch(new Request(`http://functions.test${PATHS.health}`));
    assert.equal(response.status, 200);
    assert.deepEqual(await response.json(), { status: 'ok', protocol: PROTOCOL, name: 'kopfexample' });
  });

  it('publishes its handlers in the manifest', async () => {
    const response = await example().fetch(await signedManifest('kopfexample'));
    assert.equal(response.status, 200);
    assert.deepEqual(await response.json(), {
      protocol: PROTOCOL,
      name: 'kopfexample',
      handlers: [
        { id: 'create_fn', kind: 'create', resource: { name: 'kopfexamples' } },
        {
          id: 'watch-deployments',
          kind: 'create',
          resource: { group: 'apps', version: 'v1', name: 'deployments' },
        },
      ],
      sessions: true,
      indexVersions: true,
      batches: true,
    });
  });

  it('invokes the due handlers and answers their outcomes and logs', async () => {
    const response = await example().fetch(await signedInvoke('kopfexample', invocation(['create_fn'])));
    assert.equal(response.status, 200);
    assert.deepEqual(await response.json(), {
      protocol: PROTOCOL,
      outcomes: { create_fn: { status: 'success', result: { message: 'hello kex-1' } } },
      logs: [{ level: 'info', message: 'creating kex-1', handler: 'create_fn' }],
    });
  });

  it('lets a handler declare the shape of its spec', async () => {
    interface ExampleSpec {
      field: string;
      items: string[];
    }
    const op = operator({ name: 'kopfexample', secret: SECRET });
    op.on.create('kopfexamples', function shout({ spec }: HandlerContext<ExampleSpec>) {
      return spec.field.toUpperCase();
    });
    op.on.create<ExampleSpec>('kopfexamples', function count({ spec }) {
      return spec.items.length;
    });
    const response = await op.fetch(await signedInvoke('kopfexample', invocation(['shout', 'count'])));
    assert.deepEqual(((await response.json()) as InvocationResponse).outcomes, {
      shout: { status: 'success', result: 'VALUE' },
      count: { status: 'success', result: 2 },
    });
  });

  it('publishes filters and options, and answers effects, skips and memo updates over HTTP', async () => {
    const op = operator({ name: 'kopfexample', secret: SECRET });
    op.on.field(
      'kopfexamples',
      'spec.field',
      { labels: { app: PRESENT }, retries: 5 },
      function relabel({ new: value, patch, memo }) {
        patch.metadata = { labels: { field: String(value) } };
        memo.seen = ((memo.seen as number | undefined) ?? 0) + 1;
      },
    );
    op.on.update('kopfexamples', { id: 'never', when: () => false }, () => 'not called');
    const manifest = (await (await op.fetch(await signedManifest('kopfexample'))).json()) as Manifest;
    assert.deepEqual(manifest.handlers, [
      {
        id: 'relabel/spec.field',
        kind: 'field',
        resource: { name: 'kopfexamples' },
        filters: { labels: { app: { present: true } }, field: 'spec.field' },
        options: { retries: 5 },
      },
      { id: 'never', kind: 'update', resource: { name: 'kopfexamples' }, filters: { when: true } },
    ]);
    const request = invocation(
      ['relabel/spec.field', 'never'],
      { old: 'before', new: 'after', diff: [['change', [], 'before', 'after']] },
      { reason: 'update', memo: { seen: 1 } },
    );
    const response = await op.fetch(await signedInvoke('kopfexample', request));
    assert.equal(response.status, 200);
    assert.deepEqual(await response.json(), {
      protocol: PROTOCOL,
      outcomes: {
        'relabel/spec.field': { status: 'success', patch: { metadata: { labels: { field: 'after' } } } },
        never: { status: 'skipped' },
      },
      logs: [],
      memo: { seen: 2 },
    });
  });

  it('answers unknown routes with a JSON 404', async () => {
    const response = await example().fetch(
      new Request('http://functions.test/elsewhere', { method: 'DELETE' }),
    );
    assert.equal(response.status, 404);
    assert.deepEqual(await response.json(), { protocol: PROTOCOL, error: 'no route for DELETE /elsewhere' });
  });
});

describe('bad invocations are answered with 400', () => {
  const valid = invocation(['create_fn']);
  const cases: [string, string, RegExp][] = [
    ['no body', '', /has no body/],
    ['invalid JSON', '{"protocol":', /not JSON/],
    ['not an object', '[]', /not a JSON object/],
    [
      'another protocol',
      JSON.stringify({ ...valid, protocol: 'causeway.dev/v2' }),
      /"causeway.dev\/v2" is not spoken/,
    ],
    ['no object', JSON.stringify({ ...valid, body: undefined }), /carries no object/],
    ['no handlers', JSON.stringify({ ...valid, handlers: undefined }), /no "handlers" list/],
    [
      'an unknown handler',
      JSON.stringify(invocation(['nope'])),
      /no handler "nope" here; this service has: create_fn/,
    ],
    ['a handler twice', JSON.stringify(invocation(['create_fn', 'create_fn'])), /listed twice/],
    ['another reason', JSON.stringify({ ...valid, reason: 'update' }), /not due for reason "update"/],
    ['a bad start time', JSON.stringify(invocation(['create_fn'], { started: 'yesterday' })), /ISO 8601/],
    ['a memo that is a list', JSON.stringify({ ...valid, memo: [1] }), /"memo" must be an object/],
    [
      'an unknown event type',
      JSON.stringify({ ...valid, event: 'BOOKMARK' }),
      /"event" must be one of ADDED, MODIFIED, DELETED/,
    ],
    [
      'a diff that is no list',
      JSON.stringify(invocation(['create_fn'], { diff: {} as never })),
      /"diff" must be a list/,
    ],
    ['an unknown reason', JSON.stringify({ ...valid, reason: 'pause' }), /not due for reason "pause"/],
    [
      'a malformed trace context',
      JSON.stringify({ ...valid, traceparent: '00-xyz' }),
      /"traceparent" is not a W3C trace context: "00-xyz"/,
    ],
  ];
  for (const [what, body, error] of cases) {
    it(what, async () => {
      const response = await example().fetch(
        await signed({ audience: 'kopfexample', path: PATHS.invoke, body }),
      );
      assert.equal(response.status, 400);
      const answer = (await response.json()) as { protocol: string; error: string };
      assert.equal(answer.protocol, PROTOCOL);
      assert.match(answer.error, error);
    });
  }

  it('names every handler it does not have, of a call or of a whole batch, for the gateway to read its manifest again', async () => {
    const call = await example().fetch(
      await signedInvoke('kopfexample', invocation(['gone', 'create_fn', 'old'])),
    );
    assert.equal(call.status, 400);
    assert.deepEqual(await call.json(), {
      protocol: PROTOCOL,
      error: 'no handler "gone", "old" here; this service has: create_fn, watch-deployments',
      missingHandlers: ['gone', 'old'],
    });
    const batch: InvocationBatch = {
      protocol: PROTOCOL,
      batch: [invocation(['create_fn']), invocation(['gone']), invocation(['old', 'gone'])],
    };
    const batched = await example().fetch(await signedInvoke('kopfexample', batch));
    assert.equal(batched.status, 400);
    assert.deepEqual(((await batched.json()) as { missingHandlers: string[] }).missingHandlers, [
      'gone',
      'old',
    ]);
  });

  it('tells whoever observes it of each request refused, and each handler run', async () => {
    const op = example();
    const refused: string[] = [];
    const handled: unknown[][] = [];
    op[OBSERVED]({
      refused: (reason) => refused.push(reason),
      handled: (handler, cause, outcome, ms) => handled.push([handler, cause, outcome, typeof ms]),
    });
    const unsigned = new Request(`http://functions.test${PATHS.invoke}`, { method: 'POST', body: '{}' });
    assert.equal((await op.fetch(unsigned)).status, 401);
    assert.equal((await op.fetch(await signedManifest('another'))).status, 401);
    assert.equal((await op.fetch(await signedInvoke('kopfexample', invocation(['create_fn'])))).status, 200);
    assert.deepEqual(refused, ['unsigned', 'audience']);
    assert.deepEqual(handled, [['create_fn', 'create', 'success', 'number']]);
  });
});
