import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubeClient, RequestInit } from '../kube/client.ts';
import type { Permission } from './check.ts';
import { checkGranted } from './granted.ts';
import type { PolicyRule } from './rbac.ts';

const LEASES = { group: 'coordination.k8s.io', resource: 'leases' };
const wanted: Permission[] = [
  { namespace: 'operators', ...LEASES, verb: 'get' },
  { namespace: 'operators', ...LEASES, verb: 'create' },
  { group: 'apiextensions.k8s.io', resource: 'customresourcedefinitions', verb: 'get' },
];

interface Review {
  kind: string;
  spec: { namespace?: string; resourceAttributes?: { namespace?: string; verb: string; resource: string } };
}

/**
 * An apiserver whose rules review lists `rules` (and says whether it is `incomplete`), and whose access
 * reviews allow the verbs in `allowed`; it records the reviews asked.
 */
function authorizer(rules: PolicyRule[], incomplete: boolean, allowed: string[]) {
  const asked: Review[] = [];
  const client = {
    async request(_path: string, init: RequestInit = {}) {
      const review = init.body as Review;
      asked.push(review);
      if (review.kind === 'SelfSubjectRulesReview') return { status: { resourceRules: rules, incomplete } };
      const attributes = review.spec.resourceAttributes;
      return { status: { allowed: allowed.includes(`${attributes?.verb} ${attributes?.resource}`) } };
    },
  } as unknown as KubeClient;
  return { client, asked };
}

describe('checkGranted', () => {
  it('takes a complete rules review at its word: no access review for what it lacks', async () => {
    const { client, asked } = authorizer([], false, ['get leases', 'get customresourcedefinitions']);
    const { missing, incomplete } = await checkGranted(client, wanted);
    assert.deepEqual(
      missing.map(({ verb, resource }) => `${verb} ${resource}`),
      ['get leases', 'create leases'],
    );
    assert.deepEqual(incomplete, []);
    // One rules review for the namespace, one access review for the cluster-wide permission.
    assert.deepEqual(
      asked.map(({ kind }) => kind),
      ['SelfSubjectRulesReview', 'SelfSubjectAccessReview'],
    );
  });

  it('asks again, in its namespace, each permission an incomplete rules review lacks: a webhook may grant it', async () => {
    const { client, asked } = authorizer([], true, ['get leases', 'get customresourcedefinitions']);
    const { missing, incomplete } = await checkGranted(client, wanted);
    assert.deepEqual(
      missing.map(({ verb, resource }) => `${verb} ${resource}`),
      ['create leases'],
    );
    assert.deepEqual(incomplete, ['operators']);
    const confirmations = asked.filter(({ spec }) => spec.resourceAttributes?.namespace === 'operators');
    assert.deepEqual(
      confirmations.map(({ spec }) => spec.resourceAttributes?.verb),
      ['get', 'create'],
    );
  });
});
