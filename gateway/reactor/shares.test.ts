import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { HandlerSpec } from '../../protocol/index.ts';
import { createLogger } from '../logging.ts';
import type { CallHandlers } from './calls.ts';
import type { DueCall } from './model.ts';
import { sharedCalls, WorkerShares } from './shares.ts';

const quiet = createLogger({ sink: { write: () => {} } });
const spec: HandlerSpec = { id: 'create_fn', kind: 'create', resource: { name: 'kex' } };
const due = (...services: string[]): DueCall<string>[] =>
  services.map((service) => ({ service, spec, progress: { started: '2026-12-07T00:00:00Z', retries: 0 } }));
const subject = {} as Parameters<CallHandlers<string>>[1];

/** Calls that stay open until the test ends them, by service. */
function openCalls() {
  const open: Array<{ services: string[]; end: () => void; fail: (error: Error) => void }> = [];
  const call: CallHandlers<string> = (calls) =>
    new Promise((resolve, reject) => {
      open.push({
        services: calls.map((one) => one.service),
        end: () => resolve({ outcomes: calls.map((one) => [one, { status: 'success' }]), memoUpdates: [] }),
        fail: reject,
      });
    });
  return { open, call };
}

const settled = (promise: Promise<unknown>) =>
  Promise.race([promise.then(() => true), new Promise((resolve) => setImmediate(() => resolve(false)))]);

describe("a resource's workers shared among its services", () => {
  it('gives each service ceil(concurrency / services bound), following the bindings as they change', () => {
    let services = 1;
    const shares = new WorkerShares({ concurrency: 64, services: () => services });
    assert.equal(shares.share, 64, 'a service alone on the resource is never limited');
    services = 2;
    assert.equal(shares.share, 32);
    services = 3;
    assert.equal(shares.share, 22);
    services = 0;
    assert.equal(shares.share, 64);
  });

  it("leaves out the calls of a service holding its share, which wait for it as for a service down, and calls the others'", async () => {
    const waits: string[] = [];
    const shares = new WorkerShares({
      concurrency: 2,
      services: () => 2,
      onWait: (service) => waits.push(service),
    });
    const { open, call } = openCalls();
    const shared = sharedCalls(call, shares);
    const first = shared(due('slow'), subject, quiet);
    const second = shared(due('slow', 'well'), subject, quiet);
    assert.deepEqual(
      open.map((one) => one.services),
      [['slow'], ['well']],
      'the share of slow is 1: the second cycle calls well only',
    );
    open[1]?.end();
    const results = await second;
    assert.deepEqual(
      results.outcomes.map(([one]) => one.service),
      ['well'],
    );
    assert.ok(results.down, "slow's handlers wait");
    assert.equal(await settled(results.down), false, 'not before slow has room');
    assert.deepEqual(waits, ['slow']);
    open[0]?.end();
    await first;
    assert.equal(await settled(results.down), true, 'woken once the slow call ended');
    assert.equal(shares.held('slow'), 0);
  });

  it('gives a worker back on every end of a call: success, error, abort', async () => {
    const shares = new WorkerShares({ concurrency: 2, services: () => 2 });
    const { open, call } = openCalls();
    const shared = sharedCalls(call, shares);
    const failing = shared(due('a'), subject, quiet);
    assert.equal(shares.held('a'), 1);
    open[0]?.fail(new Error('connection reset'));
    await assert.rejects(failing, /connection reset/);
    assert.equal(shares.held('a'), 0);
    const aborted = shared(due('a'), subject, quiet);
    const abort = new DOMException('stopped', 'AbortError');
    open[1]?.fail(abort);
    await assert.rejects(aborted, abort);
    assert.equal(shares.held('a'), 0);
    const ending = shared(due('a'), subject, quiet);
    open[2]?.end();
    await ending;
    assert.equal(shares.held('a'), 0);
  });

  it('wakes every cycle that waited for a share, none lost, and keeps the down of a service the call found down', async () => {
    const shares = new WorkerShares({ concurrency: 2, services: () => 2 });
    const { open, call } = openCalls();
    const shared = sharedCalls(call, shares);
    const holding = shared(due('a'), subject, quiet);
    const waiting = await Promise.all([shared(due('a'), subject, quiet), shared(due('a'), subject, quiet)]);
    assert.equal(open.length, 1, 'no call for the cycles that wait');
    open[0]?.end();
    await holding;
    for (const results of waiting) assert.equal(await settled(results.down as Promise<void>), true);

    let back!: () => void;
    const down = new Promise<void>((resolve) => {
      back = resolve;
    });
    const downCall: CallHandlers<string> = async () => ({ outcomes: [], memoUpdates: [], down });
    const found = await sharedCalls(downCall, shares)(due('b'), subject, quiet);
    assert.equal(found.down, down, 'a service found down is waited for as before');
    back();
  });
});
