/**
 * API writes of one object's whole life: create → update → delete of one KopfExample (a CRD with a
 * status subresource), with one create and one update handler returning a result, and one delete
 * handler, run twice: returning a result, then returning nothing. Kopf stores a delete handler's
 * result and Causeway does not, so only rows of the same variant compare like with like.
 * Kopf and Causeway run the same scenario with equivalent operators (bench/operators/*lifecycle*), one
 * after the other on the same fresh control plane, and their writes are read from the apiserver's own
 * request counters: write verbs on kopfexamples (with /status) and on events, minus the scenario's
 * own POST, PATCH and DELETE.
 *
 *   npm run bench:writes -- [--only kopf|causeway]
 */
import { parseArgs } from 'node:util';
import { ignoreNotFound, type KubeClient } from '../gateway/internals.ts';
import type { KubernetesObject } from '../protocol/index.ts';
import {
  type Command,
  createNamespace,
  KOPF_NAME,
  KOPFEXAMPLES,
  operatorProcess,
  prepareContenders,
  saveResults,
  say,
  sleep,
  table,
  until,
  withCluster,
} from './common.ts';
import { countWrites, difference, type WriteCounts } from './metrics.ts';

const WRITTEN_RESOURCES = ['kopfexamples', 'events'];
/** The scenario's own writes, left out of the operator's. */
const OWN: Record<string, number> = {
  'POST kopfexamples': 1,
  'PATCH kopfexamples': 1,
  'DELETE kopfexamples': 1,
};
/** After the object is gone: time for late writes (events, a last PATCH) to be counted. */
const SETTLE_MS = 3000;
const STEP_TIMEOUT_MS = 60_000;
/** What the delete handler returns, given to both operators as $BENCH_DELETE_RETURNS. */
const DELETE_RETURNS = ['result', 'nothing'] as const;
type DeleteReturns = (typeof DELETE_RETURNS)[number];

const { values } = parseArgs({
  options: { only: { type: 'string' } },
});

interface Result {
  name: string;
  deleteReturns: DeleteReturns;
  /** Seconds from each step to its result: create, update, delete (object gone). */
  stepSeconds: number[];
  /** The operator's writes only, by request (`PATCH kopfexamples/status`, `POST events`, …). */
  writes: WriteCounts;
}

interface Contender {
  name: string;
  command(namespace: string): Command;
  /** Resolves once the operator is ready for the scenario (when it must be, before the first create). */
  ready?(client: KubeClient): Promise<unknown>;
}

async function main(): Promise<void> {
  const commands = await prepareContenders();
  const all: Contender[] = [
    { name: KOPF_NAME, command: (namespace) => commands.kopf('kopf_lifecycle.py', namespace) },
    { name: 'causeway', command: (namespace) => commands.causeway('causeway-lifecycle.ts', namespace) },
    {
      name: 'causeway, with admission',
      command: (namespace) => ({
        ...commands.causeway('causeway-lifecycle.ts', namespace),
        env: { ...process.env, BENCH_ADMISSION: '1' },
      }),
      // Its webhooks must be configured before the object is created.
      ready: (client) =>
        until('the finalizer webhook', async () => {
          const configuration = await ignoreNotFound(
            client.get<{ webhooks?: Array<{ name: string }> }>(
              '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/causeway.dev',
            ),
          );
          return (
            configuration?.webhooks?.some((webhook) => webhook.name.startsWith('finalizer-')) || undefined
          );
        }),
    },
  ];
  const contenders = all.filter((contender) => !values.only || contender.name.startsWith(values.only));

  await withCluster(async ({ controlPlane, client }) => {
    const results: Result[] = [];
    for (const deleteReturns of DELETE_RETURNS) {
      for (const [index, contender] of contenders.entries()) {
        const namespace = `writes-${deleteReturns}-${index}`;
        await createNamespace(client, namespace);
        const metrics = async () => countWrites(await controlPlane.metrics(), WRITTEN_RESOURCES);
        const before = await metrics();
        const running = operatorProcess(contender.command(namespace), controlPlane.kubeconfigPath, {
          BENCH_DELETE_RETURNS: deleteReturns,
        });
        try {
          await contender.ready?.(client);
          say(
            `${contender.name}, delete handler returning ${deleteReturns}: create → update → delete of one KopfExample in ${namespace}`,
          );
          const stepSeconds = await Promise.race([
            scenario(client, namespace),
            running.exited.then((stderr) => {
              throw new Error(`${contender.name} exited during the scenario:\n${stderr}`);
            }),
          ]);
          await sleep(SETTLE_MS);
          const writes = operatorsOwn(difference(await metrics(), before));
          say(`  steps took ${stepSeconds.map((step) => `${step.toFixed(2)} s`).join(', ')}`);
          results.push({ name: contender.name, deleteReturns, stepSeconds, writes });
        } finally {
          await running.stop();
        }
      }
    }
    report(results);
    await saveResults('writes', results);
  });
}

/** The three steps, each waiting for its result; returns the seconds each took. */
async function scenario(client: KubeClient, namespace: string): Promise<number[]> {
  const path = `${KOPFEXAMPLES}/${namespace}/kopfexamples`;
  const read = () => ignoreNotFound(client.get<KubernetesObject>(`${path}/one`));
  const step = async (
    what: string,
    act: () => Promise<unknown>,
    done: (object: KubernetesObject | undefined) => boolean,
  ) => {
    const started = performance.now();
    await act();
    await until(what, async () => (done(await read()) ? true : undefined), { timeoutMs: STEP_TIMEOUT_MS });
    return (performance.now() - started) / 1000;
  };
  return [
    await step(
      'status.create_fn',
      () =>
        client.request(path, {
          method: 'POST',
          body: {
            apiVersion: 'kopf.dev/v1',
            kind: 'KopfExample',
            metadata: { name: 'one' },
            spec: { field: 'value' },
          },
        }),
      (object) => object?.status?.create_fn !== undefined,
    ),
    await step(
      'status.update_fn',
      () => client.patch(`${path}/one`, 'merge', { spec: { field: 'changed' } }),
      (object) => object?.status?.update_fn !== undefined,
    ),
    await step(
      'the object to be gone',
      () => client.request(`${path}/one`, { method: 'DELETE' }),
      (object) => object === undefined,
    ),
  ];
}

function operatorsOwn(writes: WriteCounts): WriteCounts {
  const byRequest: Record<string, number> = {};
  let total = 0;
  for (const [request, count] of Object.entries(writes.byRequest)) {
    const own = count - (OWN[request] ?? 0);
    if (own < 0) throw new Error(`fewer "${request}" than the scenario's own: ${JSON.stringify(writes)}`);
    if (own === 0) continue;
    byRequest[request] = own;
    total += own;
  }
  for (const request of Object.keys(OWN)) {
    if (!(request in writes.byRequest)) throw new Error(`the scenario's own "${request}" was not counted`);
  }
  return { total, byRequest };
}

function report(results: Result[]): void {
  const rows = results.map(({ name, deleteReturns, writes }) => {
    const causeway = results.find(
      (result) => result.name === 'causeway' && result.deleteReturns === deleteReturns,
    );
    const {
      'PATCH kopfexamples': object = 0,
      'PATCH kopfexamples/status': status = 0,
      ...others
    } = writes.byRequest;
    const other = Object.values(others).reduce((sum, count) => sum + count, 0);
    const ratio =
      causeway && causeway.writes.total > 0 ? `${(writes.total / causeway.writes.total).toFixed(2)}x` : '-';
    return [
      name,
      deleteReturns,
      String(object),
      String(status),
      other
        ? `${other} (${Object.entries(others)
            .map(([request, count]) => `${request}: ${count}`)
            .join(', ')})`
        : '0',
      String(writes.total),
      ratio,
    ];
  });
  say('\nwrites by the operator for create → update → delete of one object (scenario’s own left out)');
  for (const line of table(
    ['operator', 'delete returns', 'PATCH object', 'PATCH status', 'other writes', 'total', 'vs causeway'],
    rows,
  ))
    say(line);
}

main().catch((error: unknown) => {
  process.stderr.write(`benchmark failed: ${error instanceof Error ? error.stack : error}\n`);
  process.exit(1);
});
