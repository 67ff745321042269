/** Admission handlers in the SDK: what they see of the review, and how their endings answer it. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { InvocationRequest } from '../protocol/index.ts';
import type { Handler } from './context.ts';
import { AdmissionError, PermanentError, TemporaryError } from './errors.ts';
import { invoke } from './invoke.ts';
import { createRegistry } from './registry.ts';
import { invocation } from './test-helpers.ts';

const review = (operation: 'CREATE' | 'UPDATE' = 'CREATE', dryRun = false): Partial<InvocationRequest> => ({
  reason: 'admission',
  admission: { uid: 'review-1', operation, dryRun, userInfo: { username: 'alice', groups: ['team'] } },
});

function run(kind: 'validate' | 'mutate', handlers: Record<string, Handler>, request = review()) {
  const registry = createRegistry();
  for (const [id, fn] of Object.entries(handlers)) registry.on[kind]('kopfexamples', { id }, fn);
  return invoke(invocation(Object.keys(handlers), {}, request), registry.handlers);
}

describe('admission handlers', () => {
  it('see the operation, the dry run, the user and the object under review', async () => {
    const seen: unknown[] = [];
    await run(
      'validate',
      {
        look: ({ operation, dryRun, userInfo, subresource, name, reason }) => {
          seen.push(operation, dryRun, userInfo?.username, subresource, name, reason);
        },
      },
      review('UPDATE', true),
    );
    assert.deepEqual(seen, ['UPDATE', true, 'alice', undefined, 'kex-1', 'admission']);
  });

  it('allow by returning, and pass warnings to the client; results are not stored', async () => {
    const { outcomes } = await run('validate', {
      fine: ({ warnings }) => {
        warnings.push('field is deprecated');
        return { ignored: true };
      },
    });
    assert.deepEqual(outcomes.fine, { status: 'success', warnings: ['field is deprecated'] });
  });

  it('deny with the message and code of an AdmissionError, 500 by default as in Kopf', async () => {
    const { outcomes } = await run('validate', {
      teapot: () => {
        throw new AdmissionError('no teapots here', 418);
      },
      plain: () => {
        throw new AdmissionError('spec.field is required');
      },
    });
    assert.deepEqual(outcomes.teapot, { status: 'denied', message: 'no teapots here', code: 418 });
    assert.deepEqual(outcomes.plain, { status: 'denied', message: 'spec.field is required', code: 500 });
  });

  it("deny with Causeway errors' messages, and a generic one for other errors, which is logged", async () => {
    const { outcomes, logs } = await run('validate', {
      permanent: () => {
        throw new PermanentError('not allowed now');
      },
      temporary: () => {
        throw new TemporaryError('try later', { delay: 5 });
      },
      bug: () => {
        throw new Error('secret connection string in here');
      },
    });
    assert.deepEqual(outcomes.permanent, { status: 'denied', message: 'not allowed now', code: 500 });
    assert.deepEqual(outcomes.temporary, { status: 'denied', message: 'try later', code: 500 });
    assert.deepEqual(outcomes.bug, { status: 'denied', message: 'admission handler bug failed', code: 500 });
    assert.ok(
      logs.some((line) => line.handler === 'bug' && line.message.includes('secret connection string')),
    );
  });

  it('mutate through patch', async () => {
    const { outcomes } = await run('mutate', {
      defaults: ({ patch }) => {
        patch.spec = { replicas: 1 };
      },
    });
    assert.deepEqual(outcomes.defaults, { status: 'success', patch: { spec: { replicas: 1 } } });
  });

  it('refuse a validating handler that patches: only mutating handlers change objects', async () => {
    const { outcomes } = await run('validate', {
      sneaky: ({ patch }) => {
        patch.spec = { replicas: 1 };
      },
    });
    assert.equal(outcomes.sneaky?.status, 'denied');
    assert.match(
      (outcomes.sneaky as { message: string }).message,
      /only op\.on\.mutate handlers change objects/,
    );
  });

  it('take the admission options and check them at registration', () => {
    const registry = createRegistry();
    registry.on.validate(
      'kopfexamples',
      {
        id: 'strict',
        operations: ['CREATE'],
        subresource: 'status',
        persistent: true,
        ignoreFailures: true,
        timeout: 5,
      },
      () => {},
    );
    assert.deepEqual(registry.handlers.get('strict')?.options, {
      timeout: 5,
      operations: ['CREATE'],
      subresource: 'status',
      persistent: true,
      ignoreFailures: true,
    });
    assert.throws(
      () => registry.on.mutate('kopfexamples', { id: 'a', operations: ['PATCH' as 'CREATE'] }, () => {}),
      /option "operations" must list some of CREATE, UPDATE, DELETE, CONNECT/,
    );
    assert.throws(
      () => registry.on.mutate('kopfexamples', { id: 'b', timeout: 60 }, () => {}),
      /whole number of seconds, 1 to 30/,
    );
    assert.throws(
      () => registry.on.validate('kopfexamples', { id: 'c', retries: 3 } as never, () => {}),
      /unknown option "retries"/,
    );
  });

  it('refuse a review without its admission part', async () => {
    const registry = createRegistry();
    registry.on.validate('kopfexamples', { id: 'v' }, () => {});
    const { parseInvocation } = await import('./invocation.ts');
    const body = new TextEncoder().encode(JSON.stringify(invocation(['v'], {}, { reason: 'admission' })));
    assert.throws(() => parseInvocation(body, registry.handlers), /needs "admission" with uid, operation/);
  });
});
