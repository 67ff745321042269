/** Children given only a generateName are named by the gateway, the same way each time; a handler whose children fail, fails. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MAX_DELAY_SECONDS, type ObjectToApply, type Outcome } from '../../protocol/index.ts';
import { afterChildren, childrenOf, nameGenerated } from './outcomes.ts';

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

describe("a handler's outcome after its children", () => {
  const made: Outcome = {
    status: 'success',
    result: { ok: true },
    patch: { metadata: { labels: { a: 'b' } } },
    apply: [child({ generateName: 'kex-' })],
  };
  const refused = (status: number, retryAfterSeconds?: number) => ({
    message: `PATCH configmaps/x failed: ${status} Refused`,
    ...(retryAfterSeconds === undefined ? {} : { retryAfterSeconds }),
  });

  it('names its children as collectEffects does, and keeps all but them once they are made', () => {
    assert.deepEqual(childrenOf('uid', 'create_fn', made), nameGenerated(made.apply ?? [], 'uid/create_fn'));
    assert.deepEqual(childrenOf('uid', 'create_fn', { status: 'success' }), []);
    const { apply: _children, ...rest } = made;
    assert.deepEqual(afterChildren(made, undefined, 0, [1]), rest);
  });

  it("becomes a temporary failure with the reason, after the call's backoff by retry, or a later Retry-After", () => {
    const failed = afterChildren(made, refused(403), 1, [1, 5, 30]);
    assert.deepEqual(failed, {
      status: 'temporary',
      message: 'its children could not be applied: PATCH configmaps/x failed: 403 Refused',
      delay: 5,
    });
    assert.equal((afterChildren(made, refused(429, 60), 1, [1, 5]) as { delay: number }).delay, 60);
    assert.equal((afterChildren(made, refused(429, 2), 1, [1, 5]) as { delay: number }).delay, 5);
    const endless = afterChildren(made, refused(429, 1e300), 0, [1]) as { delay: number };
    assert.equal(endless.delay, MAX_DELAY_SECONDS, 'clamped to the longest delay');
  });
});
