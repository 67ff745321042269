/** Namespaces given as globs and negations, appearing while the gateway runs. */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it, type TestContext } from 'node:test';
import { operator } from '../../functions/index.ts';
import type { KubeClient } from '../../gateway/kube/client.ts';
import type { KubernetesObject } from '../../protocol/index.ts';
import {
  applyFile,
  eventually,
  kubeClient,
  memoryLogger,
  runOperator,
  TEST_SECRET,
} from '../support/operator.ts';

async function namespace(client: KubeClient, t: TestContext, name: string): Promise<string> {
  await client.request('/api/v1/namespaces', { method: 'POST', body: { metadata: { name } } });
  t.after(() => client.request(`/api/v1/namespaces/${name}`, { method: 'DELETE' }));
  return name;
}

describe('namespace patterns', () => {
  it('serves namespaces that match a glob when they appear, and never those negated', async (t) => {
    await applyFile(new URL('../../examples/01-minimal/crd.yaml', import.meta.url));
    const client = await kubeClient();
    const prefix = `glob-${randomBytes(3).toString('hex')}`;
    const op = operator({ name: 'globber', secret: TEST_SECRET });
    op.on.create('kopfexamples', async function create_fn({ namespace }) {
      return { in: namespace };
    });
    const logger = memoryLogger();
    const running = await runOperator(op, {
      namespaces: [`${prefix}-*`, `!${prefix}-private`],
      logger,
      transport: 'in-process',
    });
    t.after(() => running.stop());

    const served = await namespace(client, t, `${prefix}-team`);
    const negated = await namespace(client, t, `${prefix}-private`);
    const other = await namespace(client, t, `other-${prefix}`);
    const body = (name: string) => ({ apiVersion: 'kopf.dev/v1', kind: 'KopfExample', metadata: { name } });
    for (const ns of [served, negated, other]) {
      await client.request(`/apis/kopf.dev/v1/namespaces/${ns}/kopfexamples`, {
        method: 'POST',
        body: body('x'),
      });
    }
    const handled = await eventually('the object in the served namespace', async () => {
      const object = await client.get<KubernetesObject>(
        `/apis/kopf.dev/v1/namespaces/${served}/kopfexamples/x`,
      );
      return object.status?.create_fn === undefined ? undefined : object;
    });
    assert.deepEqual(handled.status?.create_fn, { in: served });
    for (const ns of [negated, other]) {
      const untouched = await client.get<KubernetesObject>(
        `/apis/kopf.dev/v1/namespaces/${ns}/kopfexamples/x`,
      );
      assert.equal(untouched.status, undefined, `${ns} is not served`);
    }
    assert.ok(
      logger.lines.some((line) =>
        line.includes(`path=/apis/kopf.dev/v1/namespaces/${served}/kopfexamples\n`),
      ),
    );
    for (const ns of [negated, other])
      assert.ok(!logger.lines.some((line) => line.includes(`namespaces/${ns}/`)));
  });
});
