import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { HandlerSpec } from '../../protocol/index.ts';
import { jsonCopy } from '../../protocol/json.ts';
import { describePath, othersResultKeys, placeResult, resultAt, resultPath } from './places.ts';

const bound = (service: string, id: string) => ({
  service: { name: service },
  spec: { id, kind: 'create', resource: { name: 'kex' } } as HandlerSpec,
});
const handlers = [bound('a', 'create_fn'), bound('a', 'own_fn'), bound('b', 'create_fn'), bound('b', 'b_fn')];

describe('where state lands', () => {
  it("puts a result at status.<id> when the id is its service's alone, in the gateway's record when two share it", () => {
    assert.deepEqual(resultPath(handlers, { name: 'a' }, 'own_fn', 'causeway'), ['own_fn']);
    assert.deepEqual(resultPath(handlers, 'a', 'create_fn', 'causeway'), [
      'causeway',
      'results',
      'a',
      'create_fn',
    ]);
    assert.deepEqual(resultPath(handlers, 'b', 'create_fn', 'causeway'), [
      'causeway',
      'results',
      'b',
      'create_fn',
    ]);
    assert.equal(
      describePath(['causeway', 'results', 'b', 'create_fn']),
      'status.causeway.results.b.create_fn',
    );
    // A service redeployed is another object of the same name: still the same service.
    const redeployed = [...handlers.slice(0, 2), bound('a', 'own_fn')];
    assert.deepEqual(resultPath(redeployed, 'a', 'own_fn', 'causeway'), ['own_fn']);
  });

  it("names the status keys of other services' results, never a service's own", () => {
    assert.deepEqual([...othersResultKeys(handlers, 'a')], ['create_fn', 'b_fn']);
    assert.deepEqual([...othersResultKeys(handlers, { name: 'b' })], ['create_fn', 'own_fn']);
    assert.deepEqual([...othersResultKeys(handlers.slice(0, 2), 'a')], []);
  });

  it('places a result over what a patch put at its place, and reads it back', () => {
    const status: Record<string, unknown> = { own_fn: { from: 'patch' }, causeway: { essence: 'E' } };
    placeResult(status, ['own_fn'], { from: 'result' });
    placeResult(status, ['causeway', 'results', 'a', 'create_fn'], 1);
    assert.deepEqual(jsonCopy(status), {
      own_fn: { from: 'result' },
      causeway: { essence: 'E', results: { a: { create_fn: 1 } } },
    });
    assert.equal(resultAt(status, ['causeway', 'results', 'a', 'create_fn']), 1);
    assert.equal(resultAt(status, ['causeway', 'results', 'b', 'create_fn']), undefined);
    assert.equal(resultAt(undefined, ['own_fn']), undefined);
  });
});
