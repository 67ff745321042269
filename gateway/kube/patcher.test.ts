import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { JsonPatch } from '../state/changes.ts';
import { ApiError } from './errors.ts';
import { testFailed } from './patcher.ts';

/** The apiserver's answer (1.34) to a JSON Patch that does not apply, a failed `test` among them: no detail. */
const notApplied = new ApiError('PATCH', '/api/v1/namespaces/prod/configmaps/c', 422, {
  kind: 'Status',
  status: 'Failure',
  message: 'the server rejected our request due to an error in our request',
  reason: 'Invalid',
  details: {},
  code: 422,
});
const guarded: JsonPatch = [
  { op: 'test', path: '/metadata/resourceVersion', value: '41' },
  { op: 'remove', path: '/metadata/finalizers/0' },
];

describe('testFailed', () => {
  it('is the 422 of a patch holding a test that did not apply, in any namespace', () => {
    assert.ok(testFailed(notApplied, guarded));
  });

  it('is not that 422 for a patch without a test, which reading again would not mend', () => {
    assert.ok(!testFailed(notApplied, [{ op: 'remove', path: '/metadata/finalizers/0' }]));
  });

  it('is not a 422 saying the patched object is invalid', () => {
    const invalid = new ApiError('PATCH', '/api/v1/namespaces/prod/configmaps/c', 422, {
      kind: 'Status',
      reason: 'Invalid',
      message:
        'ConfigMap "c" is invalid: metadata.finalizers[0]: Invalid value: "x/": name part must consist of alphanumeric characters',
    });
    assert.ok(!testFailed(invalid, guarded));
  });
});
