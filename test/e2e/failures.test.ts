import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { operator, PermanentError, TemporaryError } from '../../functions/index.ts';
import type { KubeClient } from '../../gateway/kube/client.ts';
import type { KubernetesObject } from '../../protocol/index.ts';
import { testNamespace } from '../support/cluster.ts';
import {
  applyFile,
  eventually,
  kubeClient,
  memoryLogger,
  progressOf,
  runOperator,
  TEST_SECRET,
} from '../support/operator.ts';

const CRD = new URL('../../examples/01-minimal/crd.yaml', import.meta.url);

describe('failures on a real apiserver', () => {
  let client: KubeClient;
  before(async () => {
    await applyFile(CRD);
    client = await kubeClient();
  });

  const path = (namespace: string, name = '') =>
    `/apis/kopf.dev/v1/namespaces/${namespace}/kopfexamples${name ? `/${name}` : ''}`;
  const create = (namespace: string, name: string) =>
    client.request(path(namespace), {
      method: 'POST',
      body: { apiVersion: 'kopf.dev/v1', kind: 'KopfExample', metadata: { name }, spec: {} },
    });
  const read = (namespace: string, name: string) => client.get<KubernetesObject>(path(namespace, name));
  const handled = (object: KubernetesObject) =>
    (object.status?.causeway as { essence?: string } | undefined)?.essence !== undefined;

  it('retries a temporary error after its delay, with the same idempotency key, then stores the result', async (t) => {
    const namespace = await testNamespace(t);
    const calls: Array<{ retry: number; key: string }> = [];
    const op = operator({ name: 'flaky', secret: TEST_SECRET });
    op.on.create('kopfexamples', async function create_fn({ retry, idempotencyKey }) {
      calls.push({ retry, key: idempotencyKey });
      if (retry === 0) throw new TemporaryError('not ready yet', { delay: 0.2 });
      return { attempts: retry + 1 };
    });
    const logger = memoryLogger();
    const running = await runOperator(op, { namespaces: [namespace], logger });
    t.after(() => running.stop());

    await create(namespace, 'flaky-1');
    const object = await eventually('the retried result', async () => {
      const current = await read(namespace, 'flaky-1');
      return current.status?.create_fn === undefined ? undefined : current;
    });
    assert.deepEqual(object.status?.create_fn, { attempts: 2 });
    assert.deepEqual(
      calls.map((call) => call.retry),
      [0, 1],
    );
    assert.equal(calls[0]?.key, calls[1]?.key, 'retries of one change share the idempotency key');
    assert.ok(
      logger.lines.some((line) =>
        /handler failed temporarily .*handler=create_fn .*delaySeconds=0\.2 err="not ready yet"/.test(line),
      ),
    );
  });

  it('records a permanent error as handled, stores no result, and does not call again', async (t) => {
    const namespace = await testNamespace(t);
    let calls = 0;
    const op = operator({ name: 'broken', secret: TEST_SECRET });
    op.on.create('kopfexamples', async function create_fn() {
      calls++;
      throw new PermanentError('this can never work');
    });
    const logger = memoryLogger();
    const running = await runOperator(op, { namespaces: [namespace], logger });
    t.after(() => running.stop());

    await create(namespace, 'doomed');
    const object = await eventually('the handled-record', async () => {
      const current = await read(namespace, 'doomed');
      return handled(current) ? current : undefined;
    });
    assert.equal(object.status?.create_fn, undefined);
    assert.equal(calls, 1);
    assert.ok(
      logger.lines.some((line) =>
        /\[.*\/doomed\] handler failed permanently .*handler=create_fn .*err="this can never work"/.test(
          line,
        ),
      ),
    );
  });

  it('stores no result while a function service answers malformed responses, records why, and recovers when it is fixed', async (t) => {
    const namespace = await testNamespace(t);
    const op = operator({ name: 'garbled', secret: TEST_SECRET });
    op.on.create('kopfexamples', async function create_fn() {
      return { message: 'finally' };
    });
    let broken = true;
    let malformedAnswers = 0;
    const service = {
      name: op.name,
      async fetch(request: Request) {
        if (broken && new URL(request.url).pathname === '/causeway/v1/invoke') {
          malformedAnswers++;
          return Response.json({ protocol: 'causeway.dev/v1', outcomes: { create_fn: { status: 'maybe' } } });
        }
        return op.fetch(request);
      },
    };
    const logger = memoryLogger();
    const running = await runOperator(service, { namespaces: [namespace], logger, transport: 'in-process' });
    t.after(() => running.stop());

    await create(namespace, 'patient');
    await eventually('a malformed answer', async () => (malformedAnswers > 0 ? true : undefined));
    const recorded = await eventually('the failure in the progress', async () => {
      const current = await read(namespace, 'patient');
      return progressOf(current, 'garbled');
    });
    assert.match(
      recorded.create_fn?.message ?? '',
      /status "maybe" is not success, temporary, permanent or skipped/,
    );
    const untouched = await read(namespace, 'patient');
    assert.equal(untouched.status?.create_fn, undefined, 'no result from a malformed answer');
    assert.equal(handled(untouched), false, 'not recorded as handled');
    assert.ok(
      logger.lines.some((line) => /status \\"maybe\\" is not success/.test(line)),
      logger.lines.join(''),
    );

    broken = false;
    const object = await eventually(
      'the result after the fix',
      async () => {
        const current = await read(namespace, 'patient');
        return current.status?.create_fn === undefined ? undefined : current;
      },
      30_000,
    );
    assert.deepEqual(object.status?.create_fn, { message: 'finally' });
  });

  it("takes a handler's unexpected error as its errors option says: ignored is done, permanent fails for good", async (t) => {
    const namespace = await testNamespace(t);
    const calls = { ignored_fn: 0, doomed_fn: 0 };
    const op = operator({ name: 'errors-modes', secret: TEST_SECRET });
    // With the default (temporary), each would be called again after 0.1 s, and the object never handled.
    op.on.create('kopfexamples', { errors: 'ignored', backoff: 0.1 }, async function ignored_fn() {
      calls.ignored_fn++;
      throw new Error('not worth a retry');
    });
    op.on.create('kopfexamples', { errors: 'permanent', backoff: 0.1 }, async function doomed_fn() {
      calls.doomed_fn++;
      throw new RangeError('cannot ever work');
    });
    const logger = memoryLogger();
    const running = await runOperator(op, { namespaces: [namespace], logger });
    t.after(() => running.stop());

    await create(namespace, 'modes');
    const object = await eventually('the handled-record', async () => {
      const current = await read(namespace, 'modes');
      return handled(current) ? current : undefined;
    });
    assert.equal(object.status?.ignored_fn, undefined, 'an ignored error leaves no result');
    assert.equal(object.status?.doomed_fn, undefined);
    assert.deepEqual(calls, { ignored_fn: 1, doomed_fn: 1 });
    const failed = await eventually('the HandlerFailed event', async () => {
      const { items } = await client.get<{ items: Array<{ reason: string; type: string; message: string }> }>(
        `/api/v1/namespaces/${namespace}/events`,
      );
      const found = items.filter((event) => event.reason === 'HandlerFailed');
      return found.length > 0 ? { found, all: items } : undefined;
    });
    assert.deepEqual(
      failed.found.map(({ type, message }) => ({ type, message })),
      [{ type: 'Warning', message: 'doomed_fn failed permanently: cannot ever work' }],
    );
    assert.ok(
      failed.all.every((event) => !event.message.includes('ignored_fn')),
      'nothing failed or retried about the ignored one',
    );
    const log = logger.lines.join('');
    assert.match(
      log,
      /ERROR .*handler failed, ignored \(errors: 'ignored'\): not worth a retry .*handler=ignored_fn /,
    );
    assert.match(log, /handler failed permanently .*handler=doomed_fn .*err="cannot ever work"/);
  });
});
