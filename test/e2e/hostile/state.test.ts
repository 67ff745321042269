/**
 * A service's state is its own (issue 39, point 3): two services with a handler of the same id on one
 * object each keep their progress and result, and a service that tries to set another's result, or to
 * wipe the annotations the gateway keeps its record in, is refused with the reason, nothing applied.
 * Each service sees and changes its own memo only.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { operator, TemporaryError } from '../../../functions/index.ts';
import type { KubeClient } from '../../../gateway/kube/client.ts';
import type { KubernetesObject } from '../../../protocol/index.ts';
import { testNamespace } from '../../support/cluster.ts';
import { calledHandlers, hostileService } from '../../support/hostile-service.ts';
import {
  applyFile,
  createKopfExample,
  eventually,
  kubeClient,
  memoryLogger,
  progressOf,
  runOperator,
  TEST_SECRET,
} from '../../support/operator.ts';

const CRD = new URL('../../../examples/01-minimal/crd.yaml', import.meta.url);

describe("each service's state is its own", () => {
  let client: KubeClient;
  before(async () => {
    await applyFile(CRD);
    client = await kubeClient();
  });
  const read = (path: string) => client.get<KubernetesObject>(path);
  /** The results of an id two services bind, in the gateway's record: by service. */
  const sharedResults = (object: KubernetesObject) =>
    (object.status?.causeway as { results?: Record<string, Record<string, unknown>> } | undefined)?.results;

  it("keeps two services' create_fn apart: both run and both results land; one failing for a while marks neither done", async (t) => {
    const namespace = await testNamespace(t);
    const calls: string[] = [];
    /** A service whose create_fn fails once, temporarily, on the object named after it. */
    const service = (name: string) => {
      const op = operator({ name, secret: TEST_SECRET });
      op.on.create('kopfexamples', async function create_fn({ name: object, retry }) {
        calls.push(`${name}:${object}:${retry}`);
        if (object === `${name}-fails` && retry === 0) throw new TemporaryError('not yet', { delay: 2 });
        return { by: name };
      });
      return op;
    };
    const logger = memoryLogger();
    const running = await runOperator([service('alpha'), service('beta')], {
      namespaces: [namespace],
      logger,
    });
    t.after(() => running.stop());

    for (const [failing, other] of [
      ['alpha', 'beta'],
      ['beta', 'alpha'],
    ] as const) {
      const path = await createKopfExample(namespace, `${failing}-fails`, {});
      // While the failing one waits for its retry, the other's success is its own, and so is the failure.
      const during = await eventually(`${failing}'s retry pending`, async () => {
        const object = await read(path);
        return progressOf(object, failing)?.create_fn?.retries === 1 ? object : undefined;
      });
      assert.notEqual(progressOf(during, failing)?.create_fn?.success, true, `${failing} is not marked done`);
      assert.equal(
        progressOf(during, other)?.create_fn?.success,
        true,
        `${other} is done, on its own record`,
      );
      const handled = await eventually(`both results on ${failing}-fails`, async () => {
        const object = await read(path);
        return Object.keys(sharedResults(object) ?? {}).length === 2 ? object : undefined;
      });
      assert.deepEqual(sharedResults(handled), {
        alpha: { create_fn: { by: 'alpha' } },
        beta: { create_fn: { by: 'beta' } },
      });
      assert.equal(handled.status?.create_fn, undefined, 'status.create_fn is neither one alone');
      const object = `${failing}-fails`;
      assert.deepEqual(
        calls.filter((call) => call.includes(`:${object}:`)).sort(),
        [`${failing}:${object}:0`, `${failing}:${object}:1`, `${other}:${object}:0`].sort(),
        `${other} ran once, ${failing} again after its failure`,
      );
    }
  });

  it("refuses a patch that sets the other service's result, with the reason in the log: the other's result intact", async (t) => {
    const namespace = await testNamespace(t);
    const honest = operator({ name: 'honest', secret: TEST_SECRET });
    honest.on.create('kopfexamples', async function honest_fn({ name }) {
      return { hello: name };
    });
    const forger = operator({ name: 'forger', secret: TEST_SECRET });
    forger.on.create('kopfexamples', async function create_fn({ patch }) {
      patch.status = { honest_fn: { hello: 'forged' } };
      return { done: true };
    });
    const logger = memoryLogger();
    const running = await runOperator([honest, forger], { namespaces: [namespace], logger });
    t.after(() => running.stop());

    const path = await createKopfExample(namespace, 'shared', {});
    const line = await eventually('the refusal in the log', async () =>
      logger.lines.find((each) => /its patch may not change status\.honest_fn/.test(each)),
    );
    assert.match(
      line,
      /\/shared\] handler failed temporarily .*handler=create_fn .*its patch may not change status\.honest_fn \(another service's result\)/,
    );
    const object = await eventually('the honest result and the refusal on the object', async () => {
      const current = await read(path);
      const refused = progressOf(current, 'forger')?.create_fn?.message;
      return current.status?.honest_fn !== undefined && refused ? current : undefined;
    });
    assert.deepEqual(object.status?.honest_fn, { hello: 'shared' });
    assert.equal(object.status?.create_fn, undefined, "nothing of the forger's answer applied");
    assert.equal(
      progressOf(object, 'honest')?.honest_fn?.success,
      true,
      "the honest service's handler: done",
    );
  });

  it("refuses `metadata.annotations: null` where the gateway's record is kept in annotations: the record intact", async (t) => {
    const namespace = await testNamespace(t);
    const honest = operator({ name: 'honest', secret: TEST_SECRET });
    honest.on.create('kopfexamples', async function honest_fn({ name }) {
      return { hello: name };
    });
    const inner = operator({ name: 'wiper', secret: TEST_SECRET });
    inner.on.create('kopfexamples', async function create_fn() {
      return { done: true };
    });
    const wiper = hostileService(inner, {
      answer: ({ request, answer }) => {
        const [id] = calledHandlers(request);
        const outcomes = answer.outcomes as Record<string, Record<string, unknown>>;
        return {
          ...answer,
          outcomes: {
            [id as string]: { ...outcomes[id as string], patch: { metadata: { annotations: null } } },
          },
        };
      },
    });
    const logger = memoryLogger();
    const running = await runOperator([honest, wiper], {
      namespaces: [namespace],
      logger,
      settings: { persistence: { stateIn: 'annotations' } },
    });
    t.after(() => running.stop());

    const path = await createKopfExample(
      namespace,
      'annotated',
      {},
      { annotations: { 'example.com/kept': 'yes' } },
    );
    await eventually('the refusal in the log', async () =>
      logger.lines.find((each) =>
        /\/annotated\] handler failed temporarily .*handler=create_fn .*its patch may not change metadata\.annotations as a whole \(it would wipe the gateway's record/.test(
          each,
        ),
      ),
    );
    const object = await eventually(
      "the honest result, and the wiper's refusal in its progress",
      async () => {
        const current = await read(path);
        const progress = current.metadata.annotations?.['causeway.dev/progress'];
        const stored = JSON.parse(progress ?? '{}') as Record<string, Record<string, { message?: string }>>;
        const refused = stored.wiper;
        return current.status?.honest_fn !== undefined && refused?.create_fn?.message ? current : undefined;
      },
    );
    const progress = JSON.parse(object.metadata.annotations?.['causeway.dev/progress'] as string);
    assert.match(progress.wiper.create_fn.message, /metadata\.annotations as a whole/);
    assert.equal(progress.wiper.create_fn.success, undefined);
    assert.equal(progress.honest.honest_fn.success, true, "the honest service's progress, kept");
    assert.equal(object.metadata.annotations?.['example.com/kept'], 'yes', "the user's annotation, kept");
    assert.deepEqual(object.status?.honest_fn, { hello: 'annotated' });
  });

  it('gives each service its own memo of an object: one never sees what the other kept', async (t) => {
    const namespace = await testNamespace(t);
    const service = (name: string) => {
      const op = operator({ name, secret: TEST_SECRET });
      op.on.create('kopfexamples', { id: `${name}_create` }, async ({ memo }) => {
        memo.mine = `kept by ${name}`;
        return { ok: true };
      });
      op.on.update('kopfexamples', { id: `${name}_update` }, async ({ memo }) => ({ seen: { ...memo } }));
      return op;
    };
    const running = await runOperator([service('keeper'), service('peeker')], { namespaces: [namespace] });
    t.after(() => running.stop());

    const path = await createKopfExample(namespace, 'remembered', { step: 1 });
    await eventually('both created', async () => {
      const { status } = await read(path);
      return status?.keeper_create && status.peeker_create ? true : undefined;
    });
    await client.patch(path, 'merge', { spec: { step: 2 } });
    const object = await eventually('both updated', async () => {
      const current = await read(path);
      return current.status?.keeper_update && current.status.peeker_update ? current : undefined;
    });
    assert.deepEqual(object.status?.keeper_update, { seen: { mine: 'kept by keeper' } });
    assert.deepEqual(object.status?.peeker_update, { seen: { mine: 'kept by peeker' } });
  });
});
