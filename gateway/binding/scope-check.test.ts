import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type HandlerSpec, type Manifest, PROTOCOL } from '../../protocol/index.ts';
import { ScopeError } from '../dispatch/scope.ts';
import { DEFAULT_IDENTITY } from '../identity.ts';
import type { KubeClient } from '../kube/client.ts';
import type { DiscoveredResource, DiscoveryCache } from '../kube/discovery.ts';
import { ApiError } from '../kube/errors.ts';
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

describe('the scope check of what an answer applies', () => {
  const CONFIGMAPS = { group: '', version: 'v1', plural: 'configmaps', kind: 'ConfigMap', namespaced: true };

  it('reads a child with the cluster client it was given once the gateway has one, none found on a 404', async () => {
    const paths: string[] = [];
    const client = {
      get: async (path: string) => {
        paths.push(path);
        if (path.endsWith('/absent')) {
          throw new ApiError('GET', path, 404, { kind: 'Status', code: 404, reason: 'NotFound' });
        }
        return { metadata: { name: 'there', resourceVersion: '5' } };
      },
    } as unknown as KubeClient;
    const check = new ScopeCheck(DEFAULT_IDENTITY, undefined);
    const resource = CONFIGMAPS as DiscoveredResource;
    await assert.rejects(check.current(resource, 'team-a', 'there'), /no cluster client yet/);
    check.discover({} as DiscoveryCache, client);
    assert.equal((await check.current(resource, 'team-a', 'there'))?.metadata.resourceVersion, '5');
    assert.equal(await check.current(resource, 'team-a', 'absent'), undefined);
    assert.deepEqual(paths, [
      '/api/v1/namespaces/team-a/configmaps/there',
      '/api/v1/namespaces/team-a/configmaps/absent',
    ]);
  });
});
