/** A function service in the gateway's process: asked directly, with the same checks and deadlines. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { operator } from '../../functions/index.ts';
import { KOPF_EXAMPLES } from '../../functions/test-helpers.ts';
import { FunctionService } from './function-service.ts';
import { invocationRequest } from './invocation.ts';
import { hmacSigner } from './signer.ts';
import { inProcessTransport } from './transport.ts';

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
