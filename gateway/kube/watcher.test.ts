import assert from 'node:assert/strict';
import test from 'node:test';
import { ApiError } from './errors.ts';
import { failureLevel } from './watcher.ts';

const refused = new Error('connect ECONNREFUSED 127.0.0.1:6443');
const starting = new ApiError('GET', '/apis/x', 503, { kind: 'Status', reason: 'ServiceUnavailable' });
const forbidden = new ApiError('GET', '/apis/x', 403, { kind: 'Status', reason: 'Forbidden' });

test('a watch finding no API to answer leaves saying so to the log of reachability', () => {
  for (const failures of [1, 2, 3, 10]) assert.equal(failureLevel(refused, failures), 'debug');
});

test('a transient answer is a warning once it has lasted five tries, and only then', () => {
  assert.deepEqual(
    [1, 2, 3, 4, 5, 6, 7].map((failures) => failureLevel(starting, failures)),
    ['debug', 'debug', 'debug', 'debug', 'warning', 'debug', 'debug'],
  );
});

test('an answer that refuses the watch is a warning every time', () => {
  for (const failures of [1, 2, 3, 10]) assert.equal(failureLevel(forbidden, failures), 'warning');
});
