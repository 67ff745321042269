import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { adjustNamespace, adopt, appendOwnerReference, harmonizeNaming, label } from './hierarchies.ts';

const owner = Object.freeze({
  apiVersion: 'kopf.dev/v1',
  kind: 'KopfExample',
  metadata: Object.freeze({
    name: 'kex-1',
    namespace: 'default',
    uid: 'uid-1',
    labels: Object.freeze({ app: 'demo', tier: 'gold' }),
  }),
});

const pod = (metadata?: Record<string, unknown>): Record<string, unknown> => ({
  apiVersion: 'v1',
  kind: 'Pod',
  ...(metadata ? { metadata } : {}),
  spec: { containers: [] },
});

describe('appendOwnerReference', () => {
  it('makes the owner the controller that blocks its deletion, by default', () => {
    const child = pod();
    const returned = appendOwnerReference(child, owner);
    assert.equal(returned, child, 'changed in place and returned');
    assert.deepEqual(child.metadata, {
      ownerReferences: [
        {
          apiVersion: 'kopf.dev/v1',
          kind: 'KopfExample',
          name: 'kex-1',
          uid: 'uid-1',
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    });
  });

  it('adds to the references already there, once per owner uid, to every object of a list', () => {
    const other = { apiVersion: 'v1', kind: 'ConfigMap', name: 'cm', uid: 'uid-0' };
    const children = [pod({ ownerReferences: [other] }), pod()];
    const returned = appendOwnerReference(children, owner, { controller: false, blockOwnerDeletion: false });
    appendOwnerReference(children, owner);
    assert.equal(returned, children);
    const ours = { ...other, kind: 'KopfExample', apiVersion: 'kopf.dev/v1', name: 'kex-1', uid: 'uid-1' };
    const expected = { ...ours, controller: false, blockOwnerDeletion: false };
    assert.deepEqual(
      children.map((child) => (child.metadata as { ownerReferences: unknown }).ownerReferences),
      [[other, expected], [expected]],
    );
  });

  it('refuses an owner it cannot refer to', () => {
    const noUid = { ...owner, metadata: { name: 'kex-1' } } as never;
    assert.throws(() => appendOwnerReference(pod(), noUid), /the owner has no metadata\.uid/);
    assert.throws(() => appendOwnerReference(pod(), { ...owner, kind: '' }), /the owner has no kind/);
  });
});

describe('label', () => {
  it('merges labels, keeping the ones an object already has unless forced', () => {
    const kept = pod({ labels: { app: 'mine', extra: 'x' } });
    label(kept, { app: 'demo', tier: 'gold' });
    assert.deepEqual((kept.metadata as { labels: unknown }).labels, {
      app: 'mine',
      extra: 'x',
      tier: 'gold',
    });
    const forced = pod({ labels: { app: 'mine' } });
    label([forced], { app: 'demo' }, { forced: true });
    assert.deepEqual((forced.metadata as { labels: unknown }).labels, { app: 'demo' });
  });

  it('labels the templates at the nested paths too, and skips paths that lead nowhere', () => {
    const deployment = {
      kind: 'Deployment',
      spec: { template: { spec: {} }, volumeClaimTemplates: [{ metadata: { labels: { keep: 'y' } } }, {}] },
    };
    label(
      deployment,
      { app: 'demo' },
      { nested: ['spec.template', 'spec.volumeClaimTemplates', 'spec.missing'] },
    );
    assert.deepEqual(deployment, {
      kind: 'Deployment',
      metadata: { labels: { app: 'demo' } },
      spec: {
        template: { metadata: { labels: { app: 'demo' } }, spec: {} },
        volumeClaimTemplates: [
          { metadata: { labels: { keep: 'y', app: 'demo' } } },
          { metadata: { labels: { app: 'demo' } } },
        ],
      },
    });
  });
});

describe('harmonizeNaming', () => {
  it('asks Kubernetes for a name after the given one, or uses it exactly when strict', () => {
    const [loose, strict] = [pod(), pod({ generateName: 'old-' })];
    harmonizeNaming(loose, 'kex-1');
    harmonizeNaming(strict, 'kex-1', { strict: true, forced: true });
    assert.deepEqual(loose.metadata, { generateName: 'kex-1-' });
    assert.deepEqual(strict.metadata, { name: 'kex-1' });
  });

  it('keeps a name or a prefix an object already has, unless forced', () => {
    const children = [pod({ name: 'mine' }), pod({ generateName: 'mine-' }), pod({ name: 'renamed' })];
    harmonizeNaming(children.slice(0, 2), 'kex-1', { strict: true });
    harmonizeNaming(children[2] as object, 'kex-1', { forced: true });
    assert.deepEqual(
      children.map((child) => child.metadata),
      [{ name: 'mine' }, { generateName: 'mine-' }, { generateName: 'kex-1-' }],
    );
  });

  it('refuses an empty name', () => {
    assert.throws(() => harmonizeNaming(pod(), ''), /the name must be a non-empty string/);
  });
});

describe('adjustNamespace', () => {
  it('sets the namespace where there is none, keeps an existing one unless forced, and does nothing for none', () => {
    const children = [pod(), pod({ namespace: 'elsewhere' })];
    adjustNamespace(children, 'default');
    assert.deepEqual(
      children.map((child) => child.metadata),
      [{ namespace: 'default' }, { namespace: 'elsewhere' }],
    );
    adjustNamespace(children, 'moved', { forced: true });
    assert.deepEqual(
      children.map((child) => child.metadata),
      [{ namespace: 'moved' }, { namespace: 'moved' }],
    );
    const clusterScoped = pod();
    adjustNamespace(clusterScoped, undefined);
    assert.equal('metadata' in clusterScoped, false);
  });
});

describe('adopt', () => {
  it("does all of it with the owner's name, namespace and labels", () => {
    const child = pod({ labels: { app: 'mine' } });
    assert.equal(adopt(child, owner), child);
    assert.deepEqual(child.metadata, {
      labels: { app: 'mine', tier: 'gold' },
      ownerReferences: [
        {
          apiVersion: 'kopf.dev/v1',
          kind: 'KopfExample',
          name: 'kex-1',
          uid: 'uid-1',
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
      generateName: 'kex-1-',
      namespace: 'default',
    });
    const [strict] = adopt([pod()], owner, { strict: true });
    assert.deepEqual(strict?.metadata, {
      ownerReferences: (child.metadata as { ownerReferences: unknown }).ownerReferences,
      name: 'kex-1',
      namespace: 'default',
      labels: { app: 'demo', tier: 'gold' },
    });
  });
});
