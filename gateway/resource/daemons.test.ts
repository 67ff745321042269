/** Daemons held to their service's budget of connections, with an operator in this process. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { operator } from '../../functions/index.ts';
import { KOPF_EXAMPLES } from '../../functions/test-helpers.ts';
import type { KubernetesObject } from '../../protocol/index.ts';
import { eventually } from '../../test/support/operator.ts';
import { Budgets } from '../dispatch/budget.ts';
import { FunctionService } from '../dispatch/function-service.ts';
import { hmacSigner } from '../dispatch/signer.ts';
import { inProcessTransport } from '../dispatch/transport.ts';
import type { DiscoveredResource } from '../kube/discovery.ts';
import { createLogger } from '../logging.ts';
import type { ReactorApi } from '../reactor/api.ts';
import { ObjectMemory } from '../reactor/memory.ts';
import type { ServedResource } from '../reactor/model.ts';
import type { StateStorage } from '../state/storage.ts';
import { Daemons } from './daemons.ts';

const example = (name: string): KubernetesObject => ({
  apiVersion: 'kopf.dev/v1',
  kind: 'KopfExample',
  metadata: { name, namespace: 'default', uid: `uid-${name}`, resourceVersion: '1' },
});

const quiet = createLogger({ level: 'error', sink: { write: () => {} } });

/** Daemons of `op`'s service, its budget of connections `connections`, rounds of 100 ms. */
async function daemonsOf(op: ReturnType<typeof operator>, connections: number) {
  const budgets = new Budgets({
    maxReplyBytes: 1024,
    replyBytesPerService: 1024,
    concurrencyPerService: 8,
    daemonsPerService: connections,
    indexBytesPerService: 1024,
  }).of(op.name);
  const service = await FunctionService.connect({
    transport: inProcessTransport(op),
    name: undefined,
    sign: hmacSigner(new TextEncoder().encode('a secret of at least thirty-two bytes, for the test')),
    budgets,
  });
  const served: ServedResource = {
    resource: KOPF_EXAMPLES as unknown as DiscoveredResource,
    storage: undefined as unknown as StateStorage,
    bindings: [{ service, handlers: [...service.manifest.handlers] }],
  };
  const daemons = new Daemons({
    served,
    api: {} as ReactorApi,
    memory: new ObjectMemory(),
    roundMs: 100,
    retryDelaysS: [1],
    annotationPrefix: 'causeway.dev',
    logger: quiet,
  });
  return { daemons, budgets };
}

describe('a daemon stopped', () => {
  it('is given its whole cancellationTimeout, one longer than a timer holds (some 24.8 days) included', async (t) => {
    let started = false;
    let finished = false;
    const op = operator({ name: 'patient' });
    op.on.daemon(
      'kopfexamples',
      { id: 'patient', cancellationTimeout: 30 * 24 * 3600 },
      async ({ stopped }) => {
        started = true;
        if (!stopped.aborted)
          await new Promise((ended) => stopped.addEventListener('abort', ended, { once: true }));
        await new Promise((resolve) => setTimeout(resolve, 100)); // cleans up a while after being told
        finished = true;
      },
    );
    const { daemons } = await daemonsOf(op, 4);
    t.after(() => daemons.stop());
    daemons.observe('ADDED', example('a'));
    await eventually('the daemon called', async () => started || undefined);
    await daemons.stop();
    assert.equal(finished, true, 'its call was not cut off before it returned');
  });
});

describe('daemons over their budget', () => {
  it("wait their turn, a round each, never more of the service's connections open than its budget", async (t) => {
    let open = 0;
    let most = 0;
    const rounds = new Map<string, number>();
    const op = operator({ name: 'beats' });
    op.on.daemon('kopfexamples', async function beat({ name, stopped }) {
      open++;
      most = Math.max(most, open);
      rounds.set(name, (rounds.get(name) ?? 0) + 1);
      if (!stopped.aborted)
        await new Promise((ended) => stopped.addEventListener('abort', ended, { once: true }));
      open--;
    });
    const { daemons, budgets } = await daemonsOf(op, 2);
    t.after(() => daemons.stop());
    const names = ['a', 'b', 'c', 'd', 'e'];
    for (const name of names) daemons.observe('ADDED', example(name));

    await eventually(
      'a second round of every daemon',
      async () => names.every((name) => (rounds.get(name) ?? 0) >= 2) || undefined,
    );
    assert.equal(most, 2, 'two connections at most, the budget');
    assert.ok(budgets.daemons.waits > 0, 'the others waited');
    await daemons.stop();
    assert.equal(budgets.daemons.used, 0, 'every connection given back at the stop');
  });
});
