import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApiError, isStaleWrite, StaleWrite } from './errors.ts';

const answered = (status: number, message: string) =>
  new ApiError('PATCH', '/api/v1/namespaces/team-a/configmaps/c', status, {
    kind: 'Status',
    reason: 'Conflict',
    message,
  });

describe('isStaleWrite', () => {
  it('is a write over a resourceVersion the object no longer has, looked at again', () => {
    const modified =
      'Operation cannot be fulfilled on configmaps "c": the object has been modified; please apply your changes to the latest version and try again';
    assert.ok(isStaleWrite(answered(409, modified)));
  });

  it('is a JSON Patch whose test failed, as its sender names it', () => {
    assert.ok(isStaleWrite(new StaleWrite('a test of the patch failed')));
  });

  it('is not a 422 or a 409 that merely has "test" in it (a namespace named test-a)', () => {
    const path = '/api/v1/namespaces/test-a/configmaps/latest';
    assert.ok(
      !isStaleWrite(new ApiError('PATCH', path, 422, { kind: 'Status', reason: 'Invalid', message: 'x' })),
    );
    assert.ok(
      !isStaleWrite(
        new ApiError('PATCH', path, 409, {
          kind: 'Status',
          reason: 'Conflict',
          message: 'Apply failed with 1 conflict',
        }),
      ),
    );
  });

  it('is not a conflict with another field manager, which reading again does not resolve', () => {
    assert.ok(!isStaleWrite(answered(409, 'Apply failed with 1 conflict: conflict with "kubectl": .data.a')));
  });
});
