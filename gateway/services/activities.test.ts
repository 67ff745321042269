/** The activities as the gateway runs them, against operators in this process. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { operator, PermanentError, TemporaryError } from '../../functions/index.ts';
import type { ActivitySpec, Outcome } from '../../protocol/index.ts';
import { FunctionService } from '../dispatch/function-service.ts';
import { hmacSigner } from '../dispatch/signer.ts';
import { inProcessTransport } from '../dispatch/transport.ts';
import { createLogger } from '../logging.ts';
import { Activities, ActivityFailed, type Attempt, nextStep } from './activities.ts';

const SECRET = new TextEncoder().encode('a secret of at least thirty-two bytes, for the test');

async function serviceOf(op: ReturnType<typeof operator>): Promise<FunctionService> {
  return FunctionService.connect({
    transport: inProcessTransport(op),
    name: undefined,
    sign: hmacSigner(SECRET),
  });
}

function activitiesOf(services: FunctionService[]) {
  const lines: string[] = [];
  const logger = createLogger({ level: 'debug', sink: { write: (line) => lines.push(line.trimEnd()) } });
  return { activities: new Activities({ services: () => services, retryDelaysS: [0.01], logger }), lines };
}

const spec = (options: ActivitySpec['options'] = {}): ActivitySpec => ({ id: 'a', kind: 'startup', options });
const attempt = (options: ActivitySpec['options'] = {}, retry = 0): Attempt => ({
  spec: spec(options),
  retry,
  started: 0,
});
const temporary = (delay: number): Outcome => ({ status: 'temporary', message: 'later', delay });

describe('nextStep', () => {
  it('ends on a success or a permanent failure, and retries a temporary one after its delay', () => {
    assert.deepEqual(nextStep(attempt(), { status: 'success', result: 1 }, 0), { done: true, result: 1 });
    assert.deepEqual(nextStep(attempt(), { status: 'permanent', message: 'no' }, 0), {
      failed: 'failed permanently: no',
    });
    assert.deepEqual(nextStep(attempt(), temporary(2), 1000), {
      retryAt: 3000,
      message: 'later',
      delaySeconds: 2,
    });
  });

  it('gives up once the retries are spent, or the next attempt would come after the timeout', () => {
    assert.deepEqual(nextStep(attempt({ retries: 3 }, 1), temporary(1), 0), {
      retryAt: 1000,
      message: 'later',
      delaySeconds: 1,
    });
    assert.deepEqual(nextStep(attempt({ retries: 3 }, 2), temporary(1), 0), {
      failed: 'gave up after 3 retries: later',
    });
    assert.deepEqual(nextStep(attempt({ timeout: 5 }), temporary(2), 2000), {
      retryAt: 4000,
      message: 'later',
      delaySeconds: 2,
    });
    assert.deepEqual(nextStep(attempt({ timeout: 5 }), temporary(2), 4000), {
      failed: 'gave up after its 5s timeout: later',
    });
  });
});

describe('Activities', () => {
  it('start: each service its own handlers, retried after their delays, the memo kept for probes', async () => {
    const op = operator({ name: 'hooks', secret: SECRET });
    op.on.startup(function retried({ retry, memo }) {
      if (retry < 2) throw new TemporaryError(`attempt ${retry + 1}`, { delay: 0.01 });
      memo.tasks = 3;
    });
    op.on.probe(function tasks({ memo }) {
      return memo.tasks;
    });
    const other = operator({ name: 'other', secret: SECRET });
    other.on.probe(function tasks() {
      return 'theirs';
    });
    const { activities, lines } = activitiesOf([await serviceOf(op), await serviceOf(other)]);
    await activities.startup();
    assert.equal(lines.filter((line) => line.includes('retrying in 0.01s: attempt')).length, 2);
    assert.ok(
      lines.some((line) => line.includes('startup handler "retried" of function service "hooks" succeeded')),
    );
    assert.deepEqual(await activities.probe(), [
      { service: 'hooks', results: { tasks: 3 }, failures: [], inProcess: true },
      { service: 'other', results: { tasks: 'theirs' }, failures: [], inProcess: true },
    ]);
  });

  it('fail the start naming the service and the handler, on a permanent error or once retries are spent', async () => {
    const op = operator({ name: 'hooks', secret: SECRET });
    op.on.startup(function refuses() {
      throw new PermanentError('no database');
    });
    const { activities } = activitiesOf([await serviceOf(op)]);
    await assert.rejects(activities.startup(), {
      name: 'ActivityFailed',
      message:
        'cannot start: startup handler "refuses" of function service "hooks" failed permanently: no database',
    });
    const spent = operator({ name: 'spent', secret: SECRET });
    spent.on.startup({ id: 'flaky', retries: 2 }, () => {
      throw new TemporaryError('down', { delay: 0 });
    });
    await assert.rejects(activitiesOf([await serviceOf(spent)]).activities.startup(), (error) => {
      assert.ok(error instanceof ActivityFailed);
      assert.equal(
        error.message,
        'cannot start: startup handler "flaky" of function service "spent" gave up after 2 retries: down',
      );
      return true;
    });
  });

  it('clean up within the time given, logging what fails and what is left unfinished', async () => {
    const op = operator({ name: 'hooks', secret: SECRET });
    op.on.cleanup(function fails() {
      throw new PermanentError('cannot');
    });
    // Another service's: the handlers of one call run one after another, so one that hangs holds the others.
    const stuck = operator({ name: 'stuck', secret: SECRET });
    stuck.on.cleanup(function hangs() {
      return new Promise(() => {});
    });
    const { activities, lines } = activitiesOf([await serviceOf(op), await serviceOf(stuck)]);
    const started = Date.now();
    await activities.cleanup(300);
    assert.ok(Date.now() - started < 2000, 'bounded by its timeout');
    assert.ok(
      lines.some((line) =>
        line.includes(
          'ERROR   cleanup handler "fails" of function service "hooks" failed permanently: cannot',
        ),
      ),
      lines.join('\n'),
    );
    assert.ok(
      lines.some((line) => line.includes('cleanup handlers hangs of "stuck" did not finish within 0.3s')),
    );
  });

  it('probe once, without retries, a failure reported with its service', async () => {
    const op = operator({ name: 'hooks', secret: SECRET });
    op.on.probe(function ok() {
      return 'fine';
    });
    op.on.probe(function flaky() {
      throw new TemporaryError('busy');
    });
    const { activities } = activitiesOf([await serviceOf(op)]);
    assert.deepEqual(await activities.probe(), [
      {
        service: 'hooks',
        results: { ok: 'fine' },
        failures: [`probe "flaky" of "hooks" failed (temporary; why, in the gateway's log)`],
        inProcess: true,
      },
    ]);
  });

  it('log in through the one login handler of a service, refusing a service with none', async () => {
    const op = operator({ name: 'hooks', secret: SECRET });
    op.on.login(function credentials({ retry }) {
      if (retry === 0) throw new TemporaryError('vault sealed', { delay: 0 });
      return { server: 'https://10.0.0.1:6443', token: 'abc' };
    });
    const service = await serviceOf(op);
    const { activities } = activitiesOf([service]);
    assert.deepEqual(await activities.login(service, new AbortController().signal), {
      server: 'https://10.0.0.1:6443',
      token: 'abc',
    });
    const none = await serviceOf(operator({ name: 'none', secret: SECRET }));
    await assert.rejects(
      activities.login(none, new AbortController().signal),
      /"none" has 0 login handlers; the gateway logs in through exactly one/,
    );
  });
});
