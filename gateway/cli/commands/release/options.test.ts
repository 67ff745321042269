import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DEFAULT_IDENTITY } from '../../../identity.ts';
import { releaseOptions } from './options.ts';

describe('releaseOptions', () => {
  it('removes the finalizer of the identity given, from the object in the namespace given', () => {
    assert.deepEqual(
      releaseOptions(
        { resource: 'kex', name: 'stuck' },
        { namespace: 'team-a', finalizer: 'kopf.zalando.org/KopfFinalizerMarker' },
      ),
      {
        resource: 'kex',
        name: 'stuck',
        namespace: 'team-a',
        finalizer: 'kopf.zalando.org/KopfFinalizerMarker',
        fieldManager: DEFAULT_IDENTITY.fieldManager,
      },
    );
  });
});
