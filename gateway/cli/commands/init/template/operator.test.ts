/** The handlers, called in-process with a synthetic object: no cluster needed. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { callHandlers } from 'causeway/testing';
import op from './operator.ts';

test('create_fn greets a new Example', async () => {
  const response = await callHandlers(op, {
    reason: 'create',
    body: {
      apiVersion: 'my-operator.example.com/v1',
      kind: 'Example',
      metadata: { name: 'example-1', namespace: 'default', uid: 'an-example-uid' },
      spec: { greeting: 'Hello' },
    },
  });
  // One outcome per handler: the gateway stores a success's result in status.create_fn.
  assert.deepEqual(response.outcomes, {
    create_fn: { status: 'success', result: { message: 'Hello, example-1!' } },
  });
  assert.deepEqual(
    response.logs.map(({ level, message }) => `${level} ${message}`),
    ['info greeting example-1'],
  );
});
