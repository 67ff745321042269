import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubernetesObject } from '../../protocol/index.ts';
import { NO_OBJECT_VERSION } from '../dispatch/scope.ts';
import type { KubeClient } from '../kube/client.ts';
import { type DiscoveredResource, type DiscoveryCache, ResourceNotFound } from '../kube/discovery.ts';
import { ApiError } from '../kube/errors.ts';
import { applyEachHandlers, applyObjects, kubeReactorApi, type ReactorApi } from './api.ts';

const RESOURCE = {
  group: 'kopf.dev',
  version: 'v1',
  plural: 'kopfexamples',
  kind: 'KopfExample',
  namespaced: true,
} as DiscoveredResource;

function object(uid: string): KubernetesObject {
  return {
    apiVersion: 'kopf.dev/v1',
    kind: 'KopfExample',
    metadata: { name: 'kex-1', namespace: 'default', uid, resourceVersion: '7' },
  };
}

/** The reactor's API over a client whose GETs answer `answer`, recording their paths. */
function apiAnswering(answer: (path: string) => KubernetesObject) {
  const paths: string[] = [];
  const client = {
    get: async (path: string) => {
      paths.push(path);
      return answer(path);
    },
  } as unknown as KubeClient;
  return { api: kubeReactorApi(client, {} as DiscoveryCache, RESOURCE, 'causeway'), paths };
}

describe("the reactor's reads", () => {
  it('read the object as the API has it now, by its name', async () => {
    const { api, paths } = apiAnswering(() => object('uid-1'));
    assert.deepEqual(await api.read(object('uid-1')), object('uid-1'));
    assert.deepEqual(paths, ['/apis/kopf.dev/v1/namespaces/default/kopfexamples/kex-1']);
  });

  it('find the object gone when its name is missing, or held by a namesake created since', async () => {
    const missing = apiAnswering((path) => {
      throw new ApiError('GET', path, 404, { kind: 'Status', code: 404, reason: 'NotFound' });
    });
    assert.equal(await missing.api.read(object('uid-1')), undefined);
    const namesake = apiAnswering(() => object('uid-2'));
    assert.equal(await namesake.api.read(object('uid-1')), undefined);
  });
});

describe('applyObjects', () => {
  it('applies a child named twice over the version its first apply made, not the one read before either', async () => {
    const sent: Array<string | undefined> = [];
    let version = 10;
    const api = {
      async applyObject(child: { metadata: { name: string; resourceVersion?: string } }) {
        sent.push(child.metadata.resourceVersion);
        version += 1;
        return {
          ...object('c'),
          metadata: { ...child.metadata, uid: 'c', resourceVersion: String(version) },
        };
      },
    } as unknown as ReactorApi;
    const child = (name: string, namespace?: string) => ({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name, resourceVersion: NO_OBJECT_VERSION, ...(namespace ? { namespace } : {}) },
    });
    // The third is the first, its namespace named; the fourth another namespace's namesake.
    const children = [child('a'), child('b'), child('a', 'default'), child('a', 'other')];
    const applied = await applyObjects(api, children, 'default');
    assert.deepEqual(sent, [NO_OBJECT_VERSION, NO_OBJECT_VERSION, '11', NO_OBJECT_VERSION]);
    assert.deepEqual(
      applied.map(({ metadata }) => `${metadata.name}@${metadata.resourceVersion}`),
      ['a@11', 'b@12', 'a@13', 'a@14'],
    );
  });
});

describe('applyEachHandlers', () => {
  const child = (name: string) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name } });
  const refusing = (refused: Record<string, Error>) => {
    const sent: string[] = [];
    const api = {
      async applyObject({ metadata }: { metadata: { name: string } }) {
        sent.push(metadata.name);
        if (refused[metadata.name]) throw refused[metadata.name];
        return { ...object('c'), metadata: { ...metadata, uid: metadata.name, resourceVersion: '1' } };
      },
    } as unknown as ReactorApi;
    return { api, sent };
  };

  it("fails the group of a refused child only: its later children are not tried, the next group's are", async () => {
    const invalid = new ApiError(
      'PATCH',
      'configmaps/b',
      429,
      { kind: 'Status', reason: 'TooManyRequests' },
      7,
    );
    const { api, sent } = refusing({ b: invalid });
    const results = await applyEachHandlers(
      api,
      [[child('a')], [child('b'), child('c')], [], [child('d')]],
      'ns',
    );
    assert.deepEqual(sent, ['a', 'b', 'd']);
    assert.deepEqual(
      results.map((result) =>
        'failed' in result ? result.failed : result.applied.map(({ metadata }) => metadata.name),
      ),
      [['a'], { message: invalid.message, retryAfterSeconds: 7 }, [], ['d']],
    );
  });

  it("fails the group of a child another field manager's conflict refuses, of one RBAC forbids, of one invalid", async () => {
    const refusals = {
      owned: new ApiError('PATCH', 'configmaps/owned', 409, {
        kind: 'Status',
        reason: 'Conflict',
        message: 'Apply failed with 1 conflict: conflict with "kubectl" using v1: .data.a',
      }),
      forbidden: new ApiError('PATCH', 'configmaps/forbidden', 403, { kind: 'Status', reason: 'Forbidden' }),
      invalid: new ApiError('PATCH', 'configmaps/invalid', 422, { kind: 'Status', reason: 'Invalid' }),
    };
    const { api } = refusing(refusals);
    const results = await applyEachHandlers(
      api,
      Object.keys(refusals).map((name) => [child(name)]),
      'ns',
    );
    assert.deepEqual(
      results,
      Object.values(refusals).map(({ message }) => ({ failed: { message } })),
    );
  });

  it('fails the group of a child of a kind the cluster does not serve', async () => {
    const { api } = refusing({ a: new ResourceNotFound('no resource Widget.example.com/v1') });
    const [result] = await applyEachHandlers(api, [[child('a')]], 'ns');
    assert.deepEqual(result, { failed: { message: 'no resource Widget.example.com/v1' } });
  });

  it('throws for what is not the child doing: a connection that broke, the replica fenced out', async () => {
    const { api } = refusing({ a: new Error('socket hang up') });
    await assert.rejects(applyEachHandlers(api, [[child('a')], [child('b')]], 'ns'), /socket hang up/);
  });

  it('throws for a stale child: the cycle looks again at the newer one', async () => {
    const stale = new ApiError('PATCH', 'configmaps/a', 409, {
      kind: 'Status',
      reason: 'Conflict',
      message: 'Operation cannot be fulfilled: the object has been modified',
    });
    const { api } = refusing({ a: stale });
    await assert.rejects(applyEachHandlers(api, [[child('a')], [child('b')]], 'ns'), stale);
  });
});
