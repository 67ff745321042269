/**
 * Handlers by category and for EVERYTHING (in one group), on the real control plane: served on
 * every resource they select, and on those that join later (a CRD applied after the gateway started).
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it, type TestContext } from 'node:test';
import { AdmissionError, EVERYTHING, operator } from '../../functions/index.ts';
import { applyManifests } from '../../gateway/kube/apply.ts';
import type { KubeClient } from '../../gateway/kube/client.ts';
import { ApiError } from '../../gateway/kube/errors.ts';
import type { KubernetesObject } from '../../protocol/index.ts';
import { testNamespace } from '../support/cluster.ts';
import { customResourceDefinition, type TestKind, uniqueGroup } from '../support/crds.ts';
import { eventually, kubeClient, memoryLogger, runOperator, TEST_SECRET } from '../support/operator.ts';

/** Two groups, a kind in each in the category, and a third kind in it to apply later. */
function kinds(prefix: string) {
  const category = `causeway-test-${randomBytes(4).toString('hex')}`;
  const [first, second] = [uniqueGroup(`${prefix}a`), uniqueGroup(`${prefix}b`)];
  const kind = (group: string, name: string): TestKind => ({
    group,
    kind: name,
    plural: `${name.toLowerCase()}s`,
    categories: [category],
  });
  return {
    category,
    first,
    alpha: kind(first, 'Alpha'),
    beta: kind(second, 'Beta'),
    gamma: kind(first, 'Gamma'),
  };
}

async function applyKind(t: TestContext, client: KubeClient, kind: TestKind): Promise<void> {
  await applyManifests(client, [customResourceDefinition(kind)], { fieldManager: 'causeway-tests' });
  t.after(() =>
    client.request(`/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${kind.plural}.${kind.group}`, {
      method: 'DELETE',
    }),
  );
}

function objectOf(kind: TestKind, namespace: string, name: string, spec: Record<string, unknown> = {}) {
  return {
    apiVersion: `${kind.group}/v1`,
    kind: kind.kind,
    metadata: { name, namespace },
    spec,
  } as KubernetesObject;
}

const pathOf = (kind: TestKind, namespace: string, name = '') =>
  `/apis/${kind.group}/v1/namespaces/${namespace}/${kind.plural}${name ? `/${name}` : ''}`;

describe('handlers by category and for EVERYTHING', () => {
  it('serves every resource of the category, and one that joins it after the start', async (t) => {
    const namespace = await testNamespace(t);
    const client = await kubeClient();
    const { category, first, alpha, beta, gamma } = kinds('cat');
    await applyKind(t, client, alpha);
    await applyKind(t, client, beta);
    const events: string[] = [];
    const op = operator({ name: 'categories', secret: TEST_SECRET });
    op.on.create({ category }, function create_fn({ body }) {
      return { kind: body.kind };
    });
    op.on.event({ group: first, name: EVERYTHING }, function everything_fn({ body }) {
      events.push(body.kind);
    });
    const logger = memoryLogger();
    const running = await runOperator(op, { namespaces: [namespace], logger });
    t.after(() => running.stop());

    const handled = async (kind: TestKind, name: string, timeoutMs?: number) =>
      eventually(
        `${kind.kind} ${name} handled by category`,
        async () => (await client.get<KubernetesObject>(pathOf(kind, namespace, name))).status?.create_fn,
        timeoutMs,
      );
    await applyManifests(client, [objectOf(alpha, namespace, 'one'), objectOf(beta, namespace, 'two')], {
      fieldManager: 'causeway-tests',
    });
    assert.deepEqual(await handled(alpha, 'one'), { kind: 'Alpha' });
    assert.deepEqual(await handled(beta, 'two'), { kind: 'Beta' });
    await eventually('an event of Alpha for EVERYTHING of its group', async () =>
      events.includes('Alpha') ? true : undefined,
    );
    const servedOn = (id: string) =>
      logger.lines.filter((line) => line.includes(`handler "${id}"`) && line.includes('is served on'));
    assert.equal(servedOn('everything_fn').length, 1);
    assert.match(servedOn('everything_fn')[0] as string, new RegExp(`alphas\\.${first}/v1`));
    assert.doesNotMatch(servedOn('everything_fn')[0] as string, /betas/, 'only its group');

    // A kind that joins the category (and the group) while the gateway runs.
    await applyKind(t, client, gamma);
    await applyManifests(client, [objectOf(gamma, namespace, 'three')], { fieldManager: 'causeway-tests' });
    // Discovery is read again every 30 s at the most.
    assert.deepEqual(await handled(gamma, 'three', 90_000), { kind: 'Gamma' });
    await eventually('an event of Gamma for EVERYTHING of its group', async () =>
      events.includes('Gamma') ? true : undefined,
    );
    assert.ok(servedOn('create_fn').some((line) => line.includes(`gammas.${first}/v1`)));
  });

  it('reviews every resource of the category with one webhook, one that joins it too', async (t) => {
    const namespace = await testNamespace(t);
    const client = await kubeClient();
    const { category, alpha, beta, gamma } = kinds('adm');
    await applyKind(t, client, alpha);
    await applyKind(t, client, beta);
    const op = operator({ name: 'categories', secret: TEST_SECRET });
    op.on.validate({ category }, { id: 'no-forbidden' }, function no_forbidden({ spec }) {
      if (spec.field === 'forbidden') throw new AdmissionError('spec.field must not be "forbidden"', 422);
    });
    // Its own webhook configurations: other tests configure theirs at the same time.
    const prefix = `${namespace}.causeway.dev`;
    const running = await runOperator(op, {
      namespaces: [namespace],
      identity: { annotationPrefix: prefix },
    });
    t.after(() => running.stop());

    /** The apiserver takes up a webhook's new rules shortly after they are written: until it refuses. */
    const refused = (kind: TestKind, timeoutMs?: number) =>
      eventually(
        `${kind.kind} reviewed`,
        async () => {
          try {
            await client.request(pathOf(kind, namespace), {
              method: 'POST',
              query: { dryRun: 'All' },
              body: objectOf(kind, namespace, 'probe', { field: 'forbidden' }),
            });
            return undefined;
          } catch (error) {
            if (!(error instanceof ApiError)) throw error;
            return /must not be "forbidden"/.test(error.message) ? error.message : undefined;
          }
        },
        timeoutMs,
      );
    await refused(alpha);
    await refused(beta);
    await client.request(pathOf(beta, namespace), {
      method: 'POST',
      body: objectOf(beta, namespace, 'fine', { field: 'fine' }),
    });
    const configuration = await client.get<{ webhooks: Array<{ name: string; rules: unknown[] }> }>(
      `/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/${prefix}`,
    );
    assert.deepEqual(
      configuration.webhooks.map((webhook) => [webhook.name, webhook.rules.length]),
      [[`no-forbidden.categories.${prefix}`, 2]],
    );

    await applyKind(t, client, gamma);
    await refused(gamma, 90_000);
  });
});
