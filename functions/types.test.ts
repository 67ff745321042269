/**
 * What a user's typechecker says about handlers. `tsc -p .` (npm run check) fails when an expected
 * error does not occur, so each @ts-expect-error below is an assertion; the test then runs the
 * handlers to show the typed values are the ones the handler receives.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { invoke } from './invoke.ts';
import { createRegistry } from './registry.ts';
import { invocation } from './test-helpers.ts';

interface Spec {
  field: string;
  items: string[];
}
interface Status {
  phase?: 'pending' | 'ready';
  replicas?: { ready: number };
}
interface Result {
  message: string;
}

describe('handler types', () => {
  it('type spec, status, patch and the result from the type arguments', async () => {
    const { on, handlers } = createRegistry();
    on.create<Spec, Status, Result>('kopfexamples', async function typed({ spec, status, patch }) {
      // @ts-expect-error: a misspelt spec field
      void spec.feild;
      assert.throws(() => {
        // @ts-expect-error: the spec is read-only, for the typechecker as at run time
        spec.field = 'changed';
      }, TypeError);
      type StatusPatch = NonNullable<typeof patch.status>;
      // @ts-expect-error: not a phase the status declares
      void ({ phase: 'gone' } satisfies StatusPatch);
      // @ts-expect-error: not a key of the status
      void ({ phsae: 'ready' } satisfies StatusPatch);
      patch.status = { phase: 'ready', replicas: { ready: 1 } };
      patch.spec = { items: null }; // a merge patch removes a key with null
      return { message: `${spec.field} ${spec.items.length} ${status.phase ?? 'new'}` };
    });
    // @ts-expect-error: the result does not match Result
    on.update<Spec, Status, Result>('kopfexamples', function update_fn() {
      return { mesage: 'misspelt' };
    });
    // @ts-expect-error: no handler argument is called `spce`
    on.delete('kopfexamples', function delete_fn({ spce }) {
      return spce;
    });

    const { outcomes } = await invoke(invocation(['typed']), handlers);
    assert.deepEqual(outcomes.typed, {
      status: 'success',
      result: { message: 'value 2 new' },
      patch: { status: { phase: 'ready', replicas: { ready: 1 } }, spec: { items: null } },
    });
  });
});
