/**
 * Where the start goes: `causeway run --standalone` started on a backlog of KopfExamples created
 * before it, as users get it (the tarball `npm pack` makes, installed into a project outside the
 * repository, as bench/startup.ts does) and from this repository's TypeScript sources; timed from the
 * process's spawn to the first status write, with the step lines its `--verbose` log writes as the start passes each (modules/ground.ts's
 * startStep), placed by the log's clock. A fresh namespace and backlog each round.
 *
 *   npm run bench:start-timeline -- [--rounds 5] [--objects 100]
 */
import { spawn } from 'node:child_process';
import { parseArgs } from 'node:util';
import {
  type Command,
  causewayRunStarts,
  createBacklog,
  followResults,
  median,
  ROOT,
  saveResults,
  say,
  scratchDir,
  table,
  withCluster,
} from './common.ts';

const { values } = parseArgs({
  options: { rounds: { type: 'string', default: '5' }, objects: { type: 'string', default: '100' } },
});
const ROUNDS = Number(values.rounds);
const OBJECTS = Number(values.objects);
const FIRST_WRITE = 'first status write (seen by a watch)';

/** One round: each step's milliseconds since the spawn, in the order they came. */
type Timeline = [step: string, ms: number][];

/** A step line of the text log: its time (ISO, in ms), the step, and the ms since its Node started. */
const STEP = /^(\S+) .*start: (.*?) sinceProcessStartMs=(\d+)/;
/**
 * The installed CLI replaces its Node with one started with its memory settings (launch.ts's execve):
 * the steps count from that second start, the timeline from the spawn, by the log's clock.
 */
const NODE_STARTED = 'Node started (after the launcher execve, if any)';

const FLAGS = ['--verbose', '--log-format', 'text', '--standalone', '--namespace'];

interface Contender {
  name: string;
  command(namespace: string): Command;
}

async function round(
  { file, args, cwd, env }: Command,
  kubeconfig: string,
  results: ReturnType<typeof followResults>,
): Promise<Timeline> {
  const timeline: Timeline = [];
  const spawned = performance.now();
  const spawnedAt = Date.now();
  const child = spawn(file, args, {
    cwd: cwd ?? ROOT,
    env: { ...(env ?? process.env), KUBECONFIG: kubeconfig },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let pending = '';
  child.stderr.on('data', (chunk: Buffer) => {
    pending += chunk.toString();
    const lines = pending.split('\n');
    pending = lines.pop() ?? '';
    for (const line of lines) {
      const step = STEP.exec(line);
      if (!step?.[1] || !step[2] || !step[3]) continue;
      const at = Date.parse(step[1]) - spawnedAt;
      if (timeline.length === 0) timeline.push([NODE_STARTED, at - Number(step[3])]);
      timeline.push([step[2], at]);
    }
  });
  const exited = new Promise<void>((settle) => child.once('exit', () => settle()));
  await Promise.race([
    results.until(() => results.handledAt.size > 0),
    exited.then(() => {
      throw new Error('the operator exited before its first write');
    }),
  ]);
  timeline.push([FIRST_WRITE, Math.round(Math.min(...results.handledAt.values()) - spawned)]);
  await results.until(() => results.handledAt.size === OBJECTS);
  timeline.push([`all ${OBJECTS} written`, Math.round(Math.max(...results.handledAt.values()) - spawned)]);
  child.kill('SIGTERM');
  await exited;
  return timeline;
}

async function main(): Promise<void> {
  const project = scratchDir('start-timeline');
  say(`installing the packed package into ${project}`);
  const starts = await causewayRunStarts(project, FLAGS);
  const contenders: Contender[] = [
    { name: 'installed package', command: starts.installed },
    { name: 'sources', command: starts.sources },
  ];
  await withCluster(async ({ controlPlane, client }) => {
    const timelines = new Map<string, Timeline[]>(contenders.map(({ name }) => [name, []]));
    for (let index = 0; index < ROUNDS; index++) {
      for (const [which, contender] of contenders.entries()) {
        const namespace = `start-${index}-${which}`;
        await createBacklog(client, namespace, OBJECTS);
        const results = followResults(client, namespace);
        await results.listed;
        const timeline = await round(contender.command(namespace), controlPlane.kubeconfigPath, results);
        timelines.get(contender.name)?.push(timeline);
        await results.stop();
      }
    }
    for (const [name, rounds] of timelines) {
      say(
        `\ncauseway run --standalone, ${name}: ms since the spawn, and the step's own (since the one before)`,
      );
      const steps = rounds[0]?.map(([step]) => step) ?? [];
      const at = (timeline: Timeline, step: string | undefined) =>
        step === undefined ? 0 : (timeline.find(([named]) => named === step)?.[1] ?? Number.NaN);
      for (const line of table(
        ['step', 'median', 'its own, median', ...rounds.map((_, index) => `#${index + 1}`)],
        steps.map((step, index) => {
          const each = rounds.map((timeline) => at(timeline, step));
          const own = rounds.map((timeline) => at(timeline, step) - at(timeline, steps[index - 1]));
          return [step, String(median(each)), String(median(own)), ...each.map(String)];
        }),
      ))
        say(line);
    }
    await saveResults('start-timeline', { objects: OBJECTS, timelines: Object.fromEntries(timelines) });
  });
}

await main();
