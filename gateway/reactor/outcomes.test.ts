/** Children given only a generateName are named by the gateway, the same way each time. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ObjectToApply } from '../../protocol/index.ts';
import { nameGenerated } from './outcomes.ts';

const child = (metadata: ObjectToApply['metadata']): ObjectToApply => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata,
});

describe('children with a generateName', () => {
  it('get the prefix and 5 characters of the Kubernetes alphabet, the same for the same seed and position', () => {
    const children = [child({ generateName: 'kex-1-' }), child({ generateName: 'kex-1-' })];
    const [first, second] = nameGenerated(children, 'uid-1/create_fn');
    assert.match(first?.metadata.name ?? '', /^kex-1-[bcdfghjklmnpqrstvwxz2456789]{5}$/);
    assert.notEqual(first?.metadata.name, second?.metadata.name, 'two children, two names');
    assert.equal(first?.metadata.generateName, undefined, 'applied by its name alone');
    assert.deepEqual(nameGenerated(children, 'uid-1/create_fn'), [first, second], 'a retry names them alike');
    assert.notEqual(nameGenerated(children, 'uid-2/create_fn')[0]?.metadata.name, first?.metadata.name);
  });

  it('keep a name they have, and cut a long prefix as Kubernetes does', () => {
    const [named, long] = nameGenerated(
      [child({ name: 'mine', generateName: 'ignored-' }), child({ generateName: 'x'.repeat(80) })],
      'seed',
    );
    assert.equal(named?.metadata.name, 'mine');
    assert.equal(long?.metadata.name.length, 63);
  });
});
