import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { HandlerSpec } from '../../protocol/index.ts';
import { sharedLabelSelector } from './selectors.ts';

const resource = { name: 'kopfexamples' };
const handler = (
  kind: HandlerSpec['kind'],
  labels?: NonNullable<HandlerSpec['filters']>['labels'],
): HandlerSpec => ({
  id: kind,
  kind,
  resource,
  ...(labels ? { filters: { labels } } : {}),
});

describe('shared label selectors', () => {
  it('keeps the requirements every handler has, in selector syntax', () => {
    assert.equal(
      sharedLabelSelector([
        handler('create', { app: 'web', tier: { present: true }, canary: { absent: true } }),
        handler('update', { app: 'web', canary: { absent: true } }),
      ]),
      '!canary,app=web',
    );
  });

  it('selects nothing when one handler wants every object, or when a delete handler holds finalizers', () => {
    assert.equal(sharedLabelSelector([handler('create', { app: 'web' }), handler('update')]), undefined);
    assert.equal(
      sharedLabelSelector([handler('create', { app: 'web' }), handler('delete', { app: 'web' })]),
      undefined,
    );
    assert.equal(
      sharedLabelSelector([handler('create', { app: 'web' }), handler('update', { app: 'db' })]),
      undefined,
    );
  });
});
