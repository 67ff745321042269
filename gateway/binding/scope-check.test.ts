import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type HandlerSpec, type Manifest, PROTOCOL } from '../../protocol/index.ts';
import { ScopeError } from '../dispatch/scope.ts';
import { DEFAULT_IDENTITY } from '../identity.ts';
import { ScopeCheck } from './scope-check.ts';

function service(...ids: string[]) {
  const manifest: Manifest = {
    protocol: PROTOCOL,
    name: 'billing',
    handlers: ids.map((id): HandlerSpec => ({ id, kind: 'create', resource: { name: 'kopfexamples' } })),
  };
  return { name: 'billing', scope: undefined, manifest };
}

describe('the scope check of a service as it connects', () => {
  it("refuses a handler whose id is the gateway's own key in the status, whatever the identity names it", async () => {
    await assert.rejects(
      new ScopeCheck(DEFAULT_IDENTITY, undefined).vet(service('create_fn', 'causeway')),
      new ScopeError(
        `handler "causeway" of "billing" has the id of the gateway's own record (status.causeway), ` +
          'which its results would overwrite: the service is not served',
      ),
    );
    const renamed = new ScopeCheck({ ...DEFAULT_IDENTITY, statusKey: 'operator' }, undefined);
    await assert.rejects(renamed.vet(service('operator')), /status\.operator/);
    await renamed.vet(service('causeway')); // another identity's key is a handler id like any other
  });

  it('serves a service whose handlers are keyed apart from the gateway', async () => {
    await new ScopeCheck(DEFAULT_IDENTITY, undefined).vet(service('create_fn', 'update_fn'));
  });
});
