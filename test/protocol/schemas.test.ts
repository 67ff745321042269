/**
 * The JSON Schemas in protocol/schema are the contract for function services in any language:
 * hold what the SDK and the gateway really send to them, so schemas and code cannot drift apart.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { operator, PermanentError, TemporaryError } from '../../functions/index.ts';
import { invocation as sdkInvocation, signedInvoke, signedManifest } from '../../functions/test-helpers.ts';
import { invocationRequest } from '../../gateway/dispatch/invocation.ts';

const SECRET = 'a test secret that is long enough for HS256';
const ajv = new Ajv2020({ allErrors: true, strict: true, validateFormats: false });
const schema = (name: string) =>
  ajv.compile(
    JSON.parse(readFileSync(new URL(`../../protocol/schema/${name}.schema.json`, import.meta.url), 'utf8')),
  );
const manifestSchema = schema('manifest');
const requestSchema = schema('invocation-request');
const responseSchema = schema('invocation-response');
const errorSchema = schema('error-response');

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
  it('accept the manifest the SDK serves', async () => {
    const response = await sampleOperator().fetch(await signedManifest('schemas', SECRET));
    assertValid(manifestSchema, await response.json());
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

  it('accept the error answers the SDK gives', async () => {
    const response = await sampleOperator().fetch(
      new Request('http://functions.test/causeway/v1/invoke', { method: 'POST' }),
    );
    assert.equal(response.status, 401);
    assertValid(errorSchema, await response.json());
  });

  it('accept the requests the gateway builds, without managedFields', () => {
    const object = {
      apiVersion: 'kopf.dev/v1',
      kind: 'KopfExample',
      metadata: { name: 'a', namespace: 'ns', uid: 'u', managedFields: [{ manager: 'kubectl' }] },
      spec: {},
    };
    const resource = {
      group: 'kopf.dev',
      version: 'v1',
      plural: 'kopfexamples',
      kind: 'KopfExample',
      namespaced: true,
    };
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
  });
});
