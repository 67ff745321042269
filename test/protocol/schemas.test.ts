/**
 * The JSON Schemas in protocol/schema are the contract for function services in any language:
 * hold what the SDK and the gateway really send to them, so schemas and code cannot drift apart.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { CHECKS_FILE, checksModule, formatJson } from '../../deploy/schemas.ts';
import {
  ABSENT,
  EVERYTHING,
  operator,
  PermanentError,
  PRESENT,
  requeue,
  TemporaryError,
} from '../../functions/index.ts';
import {
  KOPF_EXAMPLES,
  invocation as sdkInvocation,
  signedInvoke,
  signedManifest,
} from '../../functions/test-helpers.ts';
import { activityRequest, invocationRequest } from '../../gateway/dispatch/invocation.ts';
import {
  ACTIVITY_KIND_NAMES,
  ACTIVITY_KINDS,
  type DueHandler,
  HANDLER_KIND_NAMES,
  HANDLER_KINDS,
  type InvocationBatch,
  type KindRule,
  PROTOCOL,
} from '../../protocol/index.ts';
import { SCHEMAS } from '../../protocol/schema/index.ts';

const SECRET = 'a test secret that is long enough for HS256';
const ajv = new Ajv2020({ allErrors: true, strict: true, validateFormats: false });
const schemaText = (name: string) =>
  JSON.parse(readFileSync(new URL(`../../protocol/schema/${name}.schema.json`, import.meta.url), 'utf8'));
const schema = (name: string) => ajv.compile(schemaText(name));
const manifestSchema = schema('manifest');
const requestSchema = schema('invocation-request');
const responseSchema = schema('invocation-response');
const errorSchema = schema('error-response');
// Before the batch response's, which refers to it.
const missingIndexesSchema = schema('missing-indexes');

function assertValid(validate: ReturnType<typeof schema>, value: unknown): void {
  assert.ok(validate(value), JSON.stringify(validate.errors));
}

function sampleOperator() {
  const op = operator({ name: 'schemas', secret: SECRET });
  op.on.create('kopfexamples.kopf.dev', async function ok({ name }) {
    return { message: `hello ${name}` };
  });
  op.on.create({ group: 'kopf.dev', version: 'v1', name: 'kex' }, { id: 'later' }, async () => {
    throw new TemporaryError('not yet', { delay: 5 });
  });
  op.on.create('kex', async function never() {
    throw new PermanentError('no');
  });
  return op;
}

describe('protocol JSON Schemas', () => {
  it('are the ones their shapes make, as npm run schemas writes them', () => {
    for (const [name, schema] of Object.entries(SCHEMAS)) {
      const file = new URL(`../../protocol/schema/${name}.schema.json`, import.meta.url);
      assert.equal(
        readFileSync(file, 'utf8'),
        `${formatJson(schema)}\n`,
        `${name}.schema.json: npm run schemas`,
      );
    }
  });

  it("hold what their shapes' tests are in checks.ts, as npm run schemas writes it", () => {
    assert.equal(readFileSync(CHECKS_FILE, 'utf8'), checksModule(), 'checks.ts: npm run schemas');
  });

  it('accept the manifest the SDK serves', async () => {
    const response = await sampleOperator().fetch(await signedManifest('schemas', SECRET));
    assertValid(manifestSchema, await response.json());
  });

  it('accept the resources the SDK selects: by name, by category, EVERYTHING', async () => {
    const op = operator({ name: 'schemas', secret: SECRET });
    const fn = () => {};
    op.on.event({ category: 'all' }, { id: 'category' }, fn);
    op.on.event({ group: 'kopf.dev', version: 'v1', category: 'kopf' }, { id: 'narrowed' }, fn);
    op.on.event(EVERYTHING, { id: 'everything' }, fn);
    op.on.event(`${EVERYTHING}.kopf.dev`, { id: 'group' }, fn);
    op.on.validate({ category: 'kopf' }, { id: 'reviewed' }, fn);
    const manifest = (await (await op.fetch(await signedManifest('schemas', SECRET))).json()) as {
      handlers: { resource: unknown }[];
    };
    assert.deepEqual(
      manifest.handlers.map(({ resource }) => resource),
      [
        { category: 'all' },
        { group: 'kopf.dev', version: 'v1', category: 'kopf' },
        { name: '*' },
        { group: 'kopf.dev', name: '*' },
        { category: 'kopf' },
      ],
    );
    assertValid(manifestSchema, manifest);
  });

  it('accept the responses the SDK gives: success, temporary and permanent outcomes, logs', async () => {
    const response = await sampleOperator().fetch(
      await signedInvoke('schemas', sdkInvocation(['ok', 'later', 'never']), SECRET),
    );
    const body = (await response.json()) as { outcomes: Record<string, { status: string }> };
    assert.deepEqual(
      Object.values(body.outcomes).map((outcome) => outcome.status),
      ['success', 'temporary', 'permanent'],
    );
    assertValid(responseSchema, body);
  });

  it('accept a manifest with every kind, declarative filters and options', async () => {
    const op = operator({ name: 'schemas', secret: SECRET });
    const fn = () => {};
    op.on.create('kex', { id: 'c', labels: { app: 'demo', tier: PRESENT }, annotations: { x: ABSENT } }, fn);
    op.on.update(
      'kex',
      { id: 'u', field: 'spec.a', old: ABSENT, new: { deep: [1] }, retries: 3, timeout: 60 },
      fn,
    );
    op.on.delete('kex', { id: 'd', optional: true, backoff: 0 }, fn);
    op.on.resume('kex', { id: 'r', deleted: true }, fn);
    op.on.field('kex', 'spec.b', { id: 'f', value: null, when: () => true }, fn);
    op.on.event('kex', { id: 'e', labels: { app: () => true } }, fn);
    op.on.reconcile('kex', { id: 'rc', field: 'status.phase', value: PRESENT }, fn);
    const manifest = (await (await op.fetch(await signedManifest('schemas', SECRET))).json()) as {
      handlers: { kind: string; filters?: unknown; options?: unknown }[];
    };
    assert.deepEqual(
      manifest.handlers.map(({ kind }) => kind),
      ['create', 'update', 'delete', 'resume', 'field', 'event', 'reconcile'],
    );
    assert.equal(manifest.handlers.filter((handler) => handler.filters || handler.options).length, 7);
    assertValid(manifestSchema, manifest);
  });

  it('accept the responses with effects, skips, requeues and memo updates', async () => {
    const op = operator({ name: 'schemas', secret: SECRET });
    op.on.reconcile('kex', function effects({ patch, events, memo }) {
      patch.status = { phase: 'Ready' };
      events.normal('Reconciled', 'all good');
      events.normal('Configured', 'by kex-1', {
        about: [
          { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cm', namespace: 'default', uid: 'u' } },
          { apiVersion: 'v1', kind: 'Namespace', name: 'default' },
        ],
      });
      memo.seen = true;
      delete memo.old;
      return requeue(30, { phase: 'Ready' });
    });
    op.on.reconcile('kex', { id: 'skip', when: () => false }, () => {});
    op.on.reconcile('kex', function fails({ events }) {
      events.warning('Failing', 'not yet');
      throw new Error('not yet');
    });
    const request = sdkInvocation(
      ['effects', 'skip', 'fails'],
      {},
      { reason: 'reconcile', memo: { old: 1 } },
    );
    const body = (await (await op.fetch(await signedInvoke('schemas', request, SECRET))).json()) as {
      outcomes: Record<string, { status: string }>;
      memo: unknown;
    };
    assert.deepEqual(
      Object.values(body.outcomes).map((outcome) => outcome.status),
      ['success', 'skipped', 'temporary'],
    );
    assert.deepEqual(body.memo, { seen: true, old: null });
    assertValid(responseSchema, body);
  });

  it('accept the requests of the extended protocol: memo, event type, old, new and diff', () => {
    const update = sdkInvocation(
      ['u'],
      { old: { spec: {} }, new: { spec: { a: 1 } }, diff: [['add', ['spec', 'a'], undefined, 1]] },
      { reason: 'update', memo: { count: 1 } },
    );
    // As sent: JSON turns the undefined old value of an addition into null.
    assertValid(requestSchema, JSON.parse(JSON.stringify(update)));
    assertValid(requestSchema, sdkInvocation(['e'], {}, { reason: 'event', event: 'DELETED' }));
  });

  it('accept objects to apply and sub-handler outcomes, and requests carrying sub-handler progress', async () => {
    const op = operator({ name: 'schemas', secret: SECRET });
    op.on.create('kex', async function parent({ apply, execute }) {
      apply({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'child' }, data: { a: 'b' } });
      await execute({
        done: async () => undefined,
        later: async () => {
          throw new TemporaryError('not yet', { delay: 1 });
        },
      });
    });
    const request = sdkInvocation(['parent']);
    (request.handlers[0] as (typeof request.handlers)[0]).subhandlers = { earlier: { retry: 1, done: true } };
    assertValid(requestSchema, request);
    const response = await op.fetch(await signedInvoke('schemas', request, SECRET));
    const body = (await response.json()) as {
      outcomes: Record<string, { subhandlers?: object; apply?: unknown[] }>;
    };
    assert.deepEqual(Object.keys(body.outcomes.parent?.subhandlers ?? {}), ['done', 'later']);
    assert.equal(body.outcomes.parent?.apply?.length, 1);
    assertValid(responseSchema, body);
  });

  it('accept the error answers the SDK gives', async () => {
    const response = await sampleOperator().fetch(
      new Request('http://functions.test/causeway/v1/invoke', { method: 'POST' }),
    );
    assert.equal(response.status, 401);
    assertValid(errorSchema, await response.json());
    const lacking = await sampleOperator().fetch(
      await signedInvoke('schemas', sdkInvocation(['ok', 'gone'])),
    );
    assert.equal(lacking.status, 400);
    const body = await lacking.json();
    assert.deepEqual((body as { missingHandlers?: string[] }).missingHandlers, ['gone']);
    assertValid(errorSchema, body);
    assert.equal(errorSchema({ ...(body as object), missingHandlers: [1] }), false);
  });

  it('accept the requests the gateway builds, without managedFields', () => {
    const object = {
      apiVersion: 'kopf.dev/v1',
      kind: 'KopfExample',
      metadata: { name: 'a', namespace: 'ns', uid: 'u', managedFields: [{ manager: 'kubectl' }] },
      spec: {},
    };
    const resource = KOPF_EXAMPLES;
    const request = invocationRequest(
      'create',
      {
        ...resource,
        singular: 'kopfexample',
        shortNames: [],
        subresources: [],
        verbs: [],
      } as typeof resource,
      object,
      [{ id: 'create_fn', retry: 0, started: new Date().toISOString(), idempotencyKey: 'k' }],
      1000,
    );
    assertValid(requestSchema, request);
    assert.deepEqual(request.resource, resource, 'only the protocol fields of the resource are sent');
    assert.equal('managedFields' in request.body.metadata, false);
  });

  it('accept a manifest with activities, and one without (a service may have none)', async () => {
    const op = sampleOperator();
    op.on.startup(async function warm_up() {});
    op.on.cleanup({ id: 'goodbye', retries: 2, timeout: 5, backoff: 1 }, () => {});
    op.on.probe({ id: 'now', timeout: 2 }, () => new Date().toISOString());
    op.on.login(function credentials() {
      return { server: 'https://10.0.0.1:6443', token: 't' };
    });
    const manifest = (await (await op.fetch(await signedManifest('schemas', SECRET))).json()) as {
      activities: unknown[];
    };
    assert.deepEqual(manifest.activities, [
      { id: 'warm_up', kind: 'startup' },
      { id: 'goodbye', kind: 'cleanup', options: { retries: 2, timeout: 5, backoff: 1 } },
      { id: 'now', kind: 'probe', options: { timeout: 2 } },
      { id: 'credentials', kind: 'login' },
    ]);
    assertValid(manifestSchema, manifest);
    const without = (await (
      await sampleOperator().fetch(await signedManifest('schemas', SECRET))
    ).json()) as object;
    assert.equal('activities' in without, false, 'no activities, no list');
    assertValid(manifestSchema, without);
  });

  it('accept the activity calls the gateway builds and the answers the SDK gives, credentials included', async () => {
    const op = operator({ name: 'schemas', secret: SECRET });
    op.on.startup(function starts({ memo }) {
      memo.ready = true;
    });
    op.on.startup(function later() {
      throw new TemporaryError('not yet', { delay: 1 });
    });
    op.on.login(function credentials() {
      return { server: 'https://10.0.0.1:6443', caData: '-----BEGIN CERTIFICATE-----', token: 't' };
    });
    const started = new Date().toISOString();
    const startup = activityRequest(
      'startup',
      [
        { id: 'starts', retry: 0, started },
        { id: 'later', retry: 2, started },
      ],
      1000,
      { before: 1 },
    );
    assertValid(requestSchema, startup);
    const answer = (await (await op.fetch(await signedInvoke('schemas', startup, SECRET))).json()) as {
      outcomes: Record<string, { status: string }>;
      memo: unknown;
    };
    assert.deepEqual(
      Object.values(answer.outcomes).map((outcome) => outcome.status),
      ['success', 'temporary'],
    );
    assert.deepEqual(answer.memo, { ready: true });
    assertValid(responseSchema, answer);

    const login = activityRequest('login', [{ id: 'credentials', retry: 0, started }], 1000, {});
    const logged = (await (await op.fetch(await signedInvoke('schemas', login, SECRET))).json()) as {
      outcomes: { credentials: { status: string; result: unknown } };
    };
    assertValid(responseSchema, logged);
    assert.equal(logged.outcomes.credentials.status, 'success');
    const credentials = ajv.getSchema(
      'https://causeway.dev/schemas/v1/invocation-response.schema.json#/$defs/credentials',
    );
    assert.ok(credentials);
    assertValid(credentials, logged.outcomes.credentials.result);
    assert.equal(credentials({ server: 'https://a' }), false, 'a token or a certificate is needed');
    assert.equal(credentials({ server: 'https://a', certificateData: 'c' }), false, 'with its key');
  });

  it('reject what breaks the contract', () => {
    assert.equal(manifestSchema({ protocol: 'causeway.dev/v1', name: 'Bad_Name', handlers: [] }), false);
    assert.equal(manifestSchema({ protocol: 'causeway.dev/v2', name: 'ok', handlers: [] }), false);
    assert.equal(
      responseSchema({
        protocol: 'causeway.dev/v1',
        outcomes: { a: { status: 'temporary', message: 'x' } },
        logs: [],
      }),
      false,
    );
    assert.equal(
      responseSchema({ protocol: 'causeway.dev/v1', outcomes: { a: { status: 'maybe' } }, logs: [] }),
      false,
    );
    assert.equal(requestSchema({ ...sdkInvocation(['x']), handlers: [] }), false);
    const manifest = (handler: Record<string, unknown>) =>
      manifestSchema({
        protocol: 'causeway.dev/v1',
        name: 'ok',
        handlers: [{ id: 'h', kind: 'update', resource: { name: 'kex' }, ...handler }],
      });
    assert.equal(manifest({}), true, 'the baseline is valid');
    assert.equal(manifest({ resource: { category: 'all', group: '' } }), true, 'by category');
    assert.equal(manifest({ resource: { name: 'pods', category: 'all' } }), false, 'a name or a category');
    assert.equal(manifest({ resource: { group: 'apps' } }), false, 'a name or a category');
    assert.equal(manifest({ resource: { category: '' } }), false);
    assert.equal(manifest({ filters: { field: 'spec.a', value: { equals: 1, present: true } } }), false);
    assert.equal(manifest({ filters: { labels: { app: 1 } } }), false);
    assert.equal(manifest({ filters: { labels: { app: { present: false } } } }), false);
    assert.equal(manifest({ filters: { field: 'spec..a' } }), false);
    assert.equal(manifest({ options: { retries: 0 } }), false);
    assert.equal(manifest({ options: { backoff: -1 } }), false);
    const response = (outcome: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
      responseSchema({ protocol: 'causeway.dev/v1', outcomes: { a: outcome }, logs: [], ...extra });
    assert.equal(response({ status: 'skipped' }), true, 'the baseline is valid');
    assert.equal(response({ status: 'success', requeueAfter: 0 }), false);
    assert.equal(
      response({ status: 'success', events: [{ type: 'Info', reason: 'r', message: 'm' }] }),
      false,
    );
    const about = (reference: unknown) =>
      response({
        status: 'success',
        events: [{ type: 'Normal', reason: 'r', message: 'm', about: reference }],
      });
    assert.equal(about({ apiVersion: 'v1', kind: 'Namespace', name: 'n' }), true, 'a reference is valid');
    assert.equal(
      about({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' } }),
      false,
      'a reference, not an object',
    );
    assert.equal(about({ apiVersion: 'v1', kind: 'ConfigMap', name: 'c', uid: '' }), false);
    assert.equal(response({ status: 'success', patch: [] }), false);
    assert.equal(response({ status: 'success' }, { memo: [] }), false);
    const request = (extra: Record<string, unknown>, due: Record<string, unknown> = {}) =>
      requestSchema(sdkInvocation(['x'], due, extra as never));
    assert.equal(request({}), true, 'the baseline is valid');
    assert.equal(request({ reason: 'pause' }), false);
    assert.equal(request({ event: 'BOOKMARK' }), false);
    assert.equal(request({}, { diff: [['move', ['spec'], 1, 2]] }), false);
    assert.equal(request({}, { diff: [['add', ['spec']]] }), false);
    const activity = (extra: Record<string, unknown>) =>
      requestSchema({
        ...activityRequest('probe', [{ id: 'p', retry: 0, started: new Date().toISOString() }], 1000, {}),
        ...extra,
      });
    assert.equal(activity({}), true, 'the baseline is valid');
    assert.equal(activity({ body: sdkInvocation(['x']).body }), false, 'an activity is about no object');
    assert.equal(activity({ reason: 'create' }), false, 'a resource call has a resource and a body');
    const { idempotencyKey: _key, ...keyless } = sdkInvocation(['x']).handlers[0] as DueHandler;
    assert.equal(requestSchema({ ...sdkInvocation(['x']), handlers: [keyless] }), false);
  });

  it('name exactly the kinds, reasons, filters and options in the table of kinds', () => {
    const manifest = schemaText('manifest');
    const rules: KindRule[] = Object.values(HANDLER_KINDS);
    assert.deepEqual(manifest.$defs.handler.properties.kind.examples, HANDLER_KIND_NAMES);
    const reasons = new Set(
      rules.flatMap((rule) => [...rule.reasons, ...Object.keys(rule.reasonsByOption ?? {})]),
    );
    assert.deepEqual(
      new Set(schemaText('invocation-request').properties.reason.enum),
      new Set([...reasons, ...ACTIVITY_KIND_NAMES]),
    );
    assert.deepEqual(manifest.$defs.activity.properties.kind.examples, ACTIVITY_KIND_NAMES);
    assert.deepEqual(
      schemaText('invocation-request').if.properties.reason.enum,
      ACTIVITY_KIND_NAMES,
      'the activities are the reasons of calls about no object',
    );
    assert.deepEqual(
      new Set(Object.keys(manifest.$defs.activityOptions.properties)),
      new Set(Object.values(ACTIVITY_KINDS).flatMap((rule) => rule.options)),
    );
    assert.deepEqual(
      new Set(Object.keys(manifest.$defs.filters.properties)),
      new Set(rules.flatMap((rule) => [...rule.filters, ...(rule.argument ? [rule.argument] : [])])),
    );
    assert.deepEqual(
      new Set(Object.keys(manifest.$defs.options.properties)),
      new Set(rules.flatMap((rule) => rule.options)),
    );
  });
});

describe('protocol JSON Schemas of indexes', () => {
  const batchSchema = schema('invocation-batch');
  const batchResponseSchema = schema('batch-response');

  function indexingOperator() {
    const op = operator({ name: 'schemas', secret: SECRET });
    op.index('pods', { id: 'byNode' }, { key: 'spec.nodeName', value: ['metadata.name', { label: 'app' }] });
    op.index('pods', { id: 'byApp', labels: { app: PRESENT } }, { key: [{ label: 'app' }] });
    op.index('pods', function phases({ name, status }) {
      return { [String(status.phase)]: name };
    });
    op.index('pods', function names({ name }) {
      return name;
    });
    op.on.create('kex', { id: 'reads', indexes: ['byNode', 'phases'] }, () => {});
    op.on.probe({ id: 'counts', indexes: ['names'] }, () => 1);
    return op;
  }

  it('accept a manifest with declarative and function indexes, and handlers that read them', async () => {
    const response = await indexingOperator().fetch(await signedManifest('schemas', SECRET));
    const manifest = (await response.json()) as { handlers: { id: string; index?: unknown }[] };
    assert.deepEqual(
      manifest.handlers.map(({ id, index }) => [id, index]),
      [
        [
          'byNode',
          {
            key: [{ field: 'spec.nodeName' }],
            value: [{ field: 'metadata.name' }, { label: 'app' }],
          },
        ],
        ['byApp', { key: [{ label: 'app' }] }],
        ['phases', undefined],
        ['names', undefined],
        ['reads', undefined],
      ],
    );
    assertValid(manifestSchema, manifest);
  });

  it('accept a batch of index calls, its answer, and a call that carries indexes', async () => {
    const pod = (name: string, phase: string) => ({
      ...sdkInvocation(['phases', 'names'], {}, { reason: 'index' }),
      body: {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name, namespace: 'default', uid: `uid-${name}` },
        status: { phase },
      },
    });
    const batch = { protocol: PROTOCOL, batch: [pod('a', 'Running'), pod('b', 'Pending')] };
    assertValid(batchSchema, batch);
    const response = await indexingOperator().fetch(await signedInvoke('schemas', batch as never, SECRET));
    const body = (await response.json()) as { batch: { outcomes: Record<string, unknown> }[] };
    assert.deepEqual(
      body.batch.map(({ outcomes }) => outcomes),
      [
        {
          phases: { status: 'success', result: [['Running', 'a']] },
          names: { status: 'success', result: [[null, 'a']] },
        },
        {
          phases: { status: 'success', result: [['Pending', 'b']] },
          names: { status: 'success', result: [[null, 'b']] },
        },
      ],
    );
    assertValid(batchResponseSchema, body);
    assertValid(
      requestSchema,
      sdkInvocation(
        ['reads'],
        {},
        {
          indexes: {
            byNode: [
              ['node-1', ['a', 'b']],
              [null, []],
            ],
          },
        },
      ),
    );
  });

  it('accept a call naming an index by version only, and the answer of a service that does not have it', async () => {
    const call = sdkInvocation(
      ['reads'],
      {},
      { indexVersions: { byNode: 'a1b2c3d4.7', phases: 'a1b2c3d4.8' } },
    );
    assertValid(requestSchema, call);
    const response = await indexingOperator().fetch(await signedInvoke('schemas', call, SECRET));
    const body = await response.json();
    assert.deepEqual(body, { protocol: PROTOCOL, missingIndexes: ['byNode', 'phases'] });
    assertValid(missingIndexesSchema, body);
  });

  it('accept a batch of such calls, and its answer holding a missingIndexes in the place of each', async () => {
    const call = sdkInvocation(
      ['reads'],
      {},
      { indexVersions: { byNode: 'a1b2c3d4.7', phases: 'a1b2c3d4.8' } },
    );
    const batch: InvocationBatch = { protocol: PROTOCOL, batch: [call, sdkInvocation(['reads'])] };
    assertValid(batchSchema, batch);
    const response = await indexingOperator().fetch(await signedInvoke('schemas', batch, SECRET));
    const body = (await response.json()) as { batch: unknown[] };
    assert.deepEqual(body.batch[0], { protocol: PROTOCOL, missingIndexes: ['byNode', 'phases'] });
    assert.equal(
      (body.batch[1] as { outcomes: { reads: { status: string } } }).outcomes.reads.status,
      'success',
    );
    assertValid(batchResponseSchema, body);
  });
});
