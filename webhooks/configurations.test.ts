import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { HandlerSpec } from '../protocol/index.ts';
import { webhookConfiguration, webhookOf, withoutNamespace } from './configurations.ts';

const resource = { group: 'kopf.dev', version: 'v1', plural: 'kopfexamples', namespaced: true };
const handler = (spec: Partial<HandlerSpec>): HandlerSpec => ({
  id: 'check',
  kind: 'validate',
  resource: { name: 'kopfexamples' },
  ...spec,
});

describe('webhook configurations', () => {
  it('reach the server through a Service, with the rules, selectors and policies of the handler', () => {
    const webhook = webhookOf(
      'my-operator',
      handler({
        filters: { labels: { app: 'web', canary: { present: true }, legacy: { absent: true } } },
        options: {
          operations: ['CREATE', 'UPDATE'],
          subresource: 'status',
          sideEffects: true,
          ignoreFailures: true,
          timeout: 5,
        },
      }),
      resource,
      'causeway.dev',
    );
    const configuration = webhookConfiguration(
      'validating',
      'causeway.dev',
      [webhook],
      { service: { namespace: 'ops', name: 'gateway', port: 443 } },
      'PEM',
      ['team-a'],
    );
    assert.deepEqual(configuration.webhooks, [
      {
        name: 'check.my-operator.causeway.dev',
        clientConfig: {
          service: { namespace: 'ops', name: 'gateway', port: 443, path: '/my-operator/check' },
          caBundle: Buffer.from('PEM').toString('base64'),
        },
        rules: [
          {
            apiGroups: ['kopf.dev'],
            apiVersions: ['v1'],
            resources: ['kopfexamples/status'],
            operations: ['CREATE', 'UPDATE'],
            scope: 'Namespaced',
          },
        ],
        objectSelector: {
          matchExpressions: [
            { key: 'app', operator: 'In', values: ['web'] },
            { key: 'canary', operator: 'Exists' },
            { key: 'legacy', operator: 'DoesNotExist' },
          ],
        },
        namespaceSelector: {
          matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: ['team-a'] }],
        },
        sideEffects: 'NoneOnDryRun',
        failurePolicy: 'Ignore',
        timeoutSeconds: 5,
        matchPolicy: 'Equivalent',
        admissionReviewVersions: ['v1'],
      },
    ]);
  });

  it('have a rule for each resource of a handler by category, and select namespaces if any is namespaced', () => {
    const cluster = { group: 'kopf.dev', version: 'v1', plural: 'kopfclusters', namespaced: false };
    const webhook = webhookOf(
      'svc',
      handler({ resource: { category: 'kopf' }, options: { operations: ['CREATE'] } }),
      [resource, cluster],
      'causeway.dev',
    );
    const [only] = webhookConfiguration('validating', 'x', [webhook], { url: 'https://h' }, 'PEM', ['a'])
      .webhooks as Array<Record<string, unknown>>;
    assert.deepEqual(only?.rules, [
      {
        apiGroups: ['kopf.dev'],
        apiVersions: ['v1'],
        resources: ['kopfexamples'],
        operations: ['CREATE'],
        scope: 'Namespaced',
      },
      {
        apiGroups: ['kopf.dev'],
        apiVersions: ['v1'],
        resources: ['kopfclusters'],
        operations: ['CREATE'],
        scope: 'Cluster',
      },
    ]);
    assert.ok(only?.namespaceSelector, 'the apiserver never skips cluster-scoped objects for it');
  });

  it('name webhooks as DNS names, keeping apart ids that differ only in other characters', () => {
    const a = webhookOf('svc', handler({ id: 'check/spec.field' }), resource, 'causeway.dev');
    const b = webhookOf('svc', handler({ id: 'check-spec-field' }), resource, 'causeway.dev');
    assert.match(a.name, /^check-spec-field-[0-9a-f]{8}\.svc\.causeway\.dev$/);
    assert.equal(b.name, 'check-spec-field.svc.causeway.dev');
  });

  it("make paths of DNS labels, as the apiserver requires of a Service's path, keeping ids apart", () => {
    assert.equal(webhookOf('svc', handler({ id: 'check' }), resource, 'causeway.dev').path, '/svc/check');
    const ids = [
      'check/spec.field',
      'check-spec-field',
      'check_field',
      'checkField',
      'finalizer/kopfexamples.kopf.dev',
    ];
    const paths = ids.map((id) => webhookOf('My_Operator', handler({ id }), resource, 'causeway.dev').path);
    assert.match(paths[1] ?? '', /^\/my-operator-[0-9a-f]{8}\/check-spec-field$/);
    // What the apiserver's validation of clientConfig.service.path accepts: a DNS-1123 subdomain each.
    const subdomain = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
    for (const path of paths) {
      const segments = path.split('/').slice(1);
      assert.equal(segments.length, 2, path);
      for (const segment of segments) assert.match(segment, subdomain, path);
    }
    assert.equal(new Set(paths).size, paths.length, 'one path per handler');
  });

  it('put only the webhooks of its kind in a configuration, defaulting operations, policy and timeout', () => {
    const validating = webhookOf('svc', handler({}), resource, 'causeway.dev');
    const mutating = webhookOf('svc', handler({ id: 'defaults', kind: 'mutate' }), resource, 'causeway.dev');
    const configuration = webhookConfiguration(
      'mutating',
      'x',
      [validating, mutating],
      { url: 'https://127.0.0.1:9443' },
      'PEM',
      undefined,
    );
    const [only] = configuration.webhooks as Array<Record<string, unknown>>;
    assert.ok(only);
    assert.equal((configuration.webhooks as unknown[]).length, 1);
    assert.deepEqual(only.clientConfig, {
      url: 'https://127.0.0.1:9443/svc/defaults',
      caBundle: Buffer.from('PEM').toString('base64'),
    });
    const [rule] = only.rules as Array<{ operations: string[] }>;
    assert.deepEqual(rule?.operations, ['CREATE', 'UPDATE', 'DELETE']);
    assert.deepEqual(
      [only.failurePolicy, only.timeoutSeconds, only.reinvocationPolicy],
      ['Fail', 10, 'Never'],
    );
    assert.equal(only.namespaceSelector, undefined);
  });
});

describe("the gateway's own namespace in its webhook configurations", () => {
  const cluster = { group: 'kopf.dev', version: 'v1', plural: 'kopfclusters', namespaced: false };
  const own = { key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: ['causeway-system'] };
  const selectors = (namespaces: readonly string[] | undefined, resources = [resource]) => {
    const webhook = webhookOf('svc', handler({}), resources, 'causeway.dev');
    const built = webhookConfiguration('validating', 'x', [webhook], { url: 'https://h' }, 'PEM', namespaces);
    const configuration = withoutNamespace(built, 'causeway-system');
    return (configuration.webhooks as Array<Record<string, unknown>>).map((one) => one.namespaceSelector);
  };

  it('is left out of every webhook reviewing namespaced objects, beside the namespaces served', () => {
    assert.deepEqual(selectors(undefined), [{ matchExpressions: [own] }]);
    assert.deepEqual(selectors(['team-a']), [
      {
        matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: ['team-a'] }, own],
      },
    ]);
    assert.deepEqual(selectors(undefined, [resource, cluster]), [{ matchExpressions: [own] }]);
  });

  it('changes nothing for a webhook of cluster-scoped objects only, which no namespace selects', () => {
    assert.deepEqual(selectors(undefined, [cluster]), [undefined]);
  });
});
