import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { HandlerSpec, KubernetesObject } from '../../protocol/index.ts';
import { webhookPath } from '../../webhooks/configurations.ts';
import type { ReviewRequest } from '../../webhooks/review.ts';
import type { FunctionService } from '../dispatch/function-service.ts';
import { DEFAULT_IDENTITY } from '../identity.ts';
import type { DiscoveredResource } from '../kube/discovery.ts';
import { createLogger } from '../logging.ts';
import { Reviews } from './reviews.ts';

const widgets: DiscoveredResource = {
  group: 'example.com',
  version: 'v1',
  plural: 'widgets',
  kind: 'Widget',
  namespaced: true,
  singular: 'widget',
  shortNames: [],
  categories: [],
  subresources: [],
  verbs: [],
};
const FINALIZER_PATH = webhookPath('causeway', 'finalizer/widgets.example.com');

function reviews(serves: (namespace: string | undefined) => boolean = () => true) {
  return new Reviews({
    identity: DEFAULT_IDENTITY,
    serves,
    logger: createLogger({ sink: { write: () => {} } }),
  });
}

function widget(finalizers?: string[]): KubernetesObject {
  return {
    apiVersion: 'example.com/v1',
    kind: 'Widget',
    metadata: { name: 'w', namespace: 'default', uid: 'w-uid', ...(finalizers ? { finalizers } : {}) },
  };
}

function creating(object: KubernetesObject, namespace = 'default'): ReviewRequest {
  return {
    uid: 'u',
    kind: { group: 'example.com', version: 'v1', kind: 'Widget' },
    resource: { group: 'example.com', version: 'v1', resource: 'widgets' },
    namespace,
    operation: 'CREATE',
    userInfo: { username: 'someone' },
    object,
    dryRun: false,
  };
}

const validating = (id: string): HandlerSpec => ({
  id,
  kind: 'validate',
  resource: { name: 'widgets', group: 'example.com', version: 'v1' },
});
const service = (name: string) => ({ name }) as FunctionService;
const signal = new AbortController().signal;

describe('Reviews', () => {
  it('lets a review through at a path it does not serve, and names it "other"', async () => {
    const served = reviews();
    assert.deepEqual(await served.decide(creating(widget()), '/gone/handler', signal), { allowed: true });
    assert.equal(served.nameOf('/gone/handler'), 'other');
  });

  it("puts the gateway's finalizer on at creation where needed, without a call", async () => {
    const { finalizer } = DEFAULT_IDENTITY;
    const served = reviews();
    served.holdAtCreation(widgets, (object) => object.metadata.name === 'w');
    assert.equal(served.nameOf(FINALIZER_PATH), '/causeway/finalizer/widgets.example.com');
    assert.deepEqual(await served.decide(creating(widget()), FINALIZER_PATH, signal), {
      allowed: true,
      patch: [{ op: 'add', path: '/metadata/finalizers', value: [finalizer] }],
    });
    assert.deepEqual(await served.decide(creating(widget(['other'])), FINALIZER_PATH, signal), {
      allowed: true,
      patch: [{ op: 'add', path: '/metadata/finalizers/-', value: finalizer }],
    });
    assert.deepEqual(await served.decide(creating(widget([finalizer])), FINALIZER_PATH, signal), {
      allowed: true,
    });
  });

  it('lets through, untouched, what the finalizer rule does not need, or a namespace it does not serve', async () => {
    const served = reviews((namespace) => namespace === 'default');
    served.holdAtCreation(widgets, (object) => object.metadata.labels?.held === 'yes');
    const held = { ...widget(), metadata: { ...widget().metadata, labels: { held: 'yes' } } };
    const decide = (object: KubernetesObject, namespace?: string) =>
      served.decide(creating(object, namespace), FINALIZER_PATH, signal);
    assert.ok((await decide(held)).patch, 'needed and served: held');
    assert.deepEqual(await decide(widget()), { allowed: true });
    assert.deepEqual(await decide(held, 'elsewhere'), { allowed: true });
  });

  it("waits for a decision a second less than the webhook's timeout, half a second at least", () => {
    const served = reviews();
    served.holdAtCreation(widgets, () => true); // timeout: 5 s
    assert.equal(served.deadlineMs(FINALIZER_PATH), 4000);
    assert.equal(served.deadlineMs('/not/served'), 9000); // the apiserver's default: 10 s
    served.serve(service('fast'), [{ ...validating('v'), options: { timeout: 1 } }], widgets);
    assert.equal(served.deadlineMs(webhookPath('fast', 'v')), 500);
  });

  it("keeps a retired service's webhooks until they are dropped, and those served again after", () => {
    const served = reviews();
    const old = service('widgets');
    served.serve(old, [validating('a'), validating('b')], widgets);
    served.retire(old);
    assert.deepEqual(
      served.webhooks().map(({ path }) => path),
      ['/widgets/a', '/widgets/b'],
    );
    served.serve(service('widgets'), [validating('b')], widgets);
    served.dropRetired();
    assert.deepEqual(
      served.webhooks().map(({ path }) => path),
      ['/widgets/b'],
    );
    assert.equal(served.nameOf('/widgets/a'), 'other');
  });
});
