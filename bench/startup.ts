/**
 * Start-up: from starting an operator process to its first result on an object that was waiting for
 * it (a KopfExample created before the start). Three contenders, in turns, on one fresh control plane:
 * - kopf 1.45.2, the baseline (`kopf run --standalone`);
 * - causeway as users get it: the tarball `npm pack` makes, installed into a project outside the
 *   repository, `node_modules/.bin/causeway run operator.ts` there (the bundled CLI);
 * - causeway from this repository's TypeScript sources (`node gateway/cli/main.ts run`).
 *
 *   npm run bench:startup -- [--rounds 5]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { KubernetesObject } from '../protocol/index.ts';
import {
  type Command,
  causewayRunStarts,
  createNamespace,
  KOPF_NAME,
  KOPFEXAMPLES,
  median,
  operatorProcess,
  prepareContenders,
  saveResults,
  say,
  table,
  until,
  withCluster,
} from './common.ts';

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '5' } } });
const ROUNDS = Number(values.rounds);

interface Contender {
  name: string;
  command(namespace: string): Command;
}

async function main(): Promise<void> {
  const commands = await prepareContenders();
  const project = mkdtempSync(join(tmpdir(), 'causeway-startup-'));
  try {
    say(`installing the packed package into ${project}`);
    const starts = await causewayRunStarts(project, ['--quiet', '--standalone', '--namespace']);
    const contenders: Contender[] = [
      { name: KOPF_NAME, command: (namespace) => commands.kopf('kopf_operator.py', namespace) },
      { name: 'causeway (installed package)', command: starts.installed },
      { name: 'causeway (sources)', command: starts.sources },
    ];
    await withCluster(async ({ controlPlane, client }) => {
      const seconds = new Map<string, number[]>(contenders.map(({ name }) => [name, []]));
      for (let round = 0; round < ROUNDS; round++) {
        for (const [index, contender] of contenders.entries()) {
          const namespace = `startup-${round}-${index}`;
          await createNamespace(client, namespace);
          const path = `${KOPFEXAMPLES}/${namespace}/kopfexamples`;
          await client.request(path, {
            method: 'POST',
            body: { apiVersion: 'kopf.dev/v1', kind: 'KopfExample', metadata: { name: 'kex' }, spec: {} },
          });
          const started = performance.now();
          const running = operatorProcess(contender.command(namespace), controlPlane.kubeconfigPath);
          await until(
            `${contender.name}'s result`,
            async () => {
              const object = await client.get<KubernetesObject>(`${path}/kex`);
              return object.status?.create_fn === undefined ? undefined : true;
            },
            { intervalMs: 5 },
          );
          seconds.get(contender.name)?.push((performance.now() - started) / 1000);
          await running.stop();
        }
      }
      report(seconds);
      await saveResults('startup', Object.fromEntries(seconds));
    });
  } finally {
    rmSync(project, { recursive: true, force: true });
  }
}

function report(seconds: Map<string, number[]>): void {
  const baseline = median(seconds.get(KOPF_NAME) ?? [], 0);
  say('');
  for (const line of table(
    ['operator', 'median', 'min', 'max', 'vs kopf'],
    [...seconds].map(([name, values]) => [
      name,
      `${median(values, 0).toFixed(2)} s`,
      `${Math.min(...values).toFixed(2)} s`,
      `${Math.max(...values).toFixed(2)} s`,
      `${(median(values, 0) / baseline).toFixed(2)}x`,
    ]),
  ))
    say(line);
}

await main();
