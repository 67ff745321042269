/**
 * A soak: objects created, updated and deleted at a steady rate (`--rate`, 20 a second by default) for
 * `--minutes` (60 by default), each with a timer and a daemon, and a validating and a mutating webhook
 * that the apiserver calls on those writes ([the operator](operators/causeway-soak.ts)). The gateway
 * and the function service run as deployed, apart (`causeway gateway` calling `causeway serve` over
 * HTTPS, signed), on a fresh control plane. Each object is updated `--lifetime`/2 seconds after its
 * creation and deleted `--lifetime` seconds after it.
 *
 * Every `--sample-seconds`, of the gateway's process: its RSS and open file descriptors (sockets among
 * them) from /proc, its heap, event-loop lag (p99 since the previous sample) and event-loop delay
 * histograms (the delay, and its own part: docs/observability.md) from its /metrics, with its handler
 * calls and admission reviews; the function service's RSS and descriptors too. At
 * the end, the verdicts (see `verdicts`), over the samples after the warm-up (`--warmup-seconds`, a
 * tenth of the run by default, at least 15 s).
 *
 *   npm run bench:soak -- [--minutes 60] [--rate 20] [--lifetime 6] [--timer-interval 3]
 *                         [--sample-seconds 5] [--warmup-seconds N] [--bound-seconds 10]
 */
import { readdirSync, readlinkSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { freePorts } from '../deploy/control-plane/index.ts';
import type { KubeClient, RequestInit } from '../gateway/internals.ts';
import type { KubernetesObject } from '../protocol/index.ts';
import {
  createNamespace,
  KOPFEXAMPLES,
  median,
  percentiles,
  prepareContenders,
  processUsage,
  saveResults,
  say,
  sleep,
  startTogether,
  type Together,
  table,
  until,
  watchKopfExamples,
  withArgs,
  withCluster,
} from './common.ts';

export interface SoakOptions {
  /** Of load: objects are created for this long. */
  seconds: number;
  /** Objects created a second (as many updated, as many deleted, once the first are old enough). */
  rate: number;
  /** From an object's creation to its deletion; its update comes halfway. */
  lifetimeSeconds: number;
  warmupSeconds: number;
  sampleSeconds: number;
  /** Each step of an object (created, updated, deleted) must be handled within this. */
  boundSeconds: number;
}

/** What the soak watches: the gateway's process, where it serves its metrics, and the function service's process. */
export interface SoakTarget {
  client: KubeClient;
  namespace: string;
  gatewayPid: number;
  functionsPid: number;
  metricsUrl: string;
  /** Whether the gateway has exited, which ends the soak. */
  gone(): boolean;
}

/** The soak's target: a gateway and its function service started together, the gateway serving its metrics on `metricsPort`. */
export function soakTarget(
  running: Together,
  { client, namespace, metricsPort }: { client: KubeClient; namespace: string; metricsPort: number },
): SoakTarget {
  const [gatewayPid, functionsPid] = running.pids as [number, number];
  return {
    client,
    namespace,
    gatewayPid,
    functionsPid,
    metricsUrl: `http://127.0.0.1:${metricsPort}/metrics`,
    gone: () => running.gone,
  };
}

export interface Sample {
  /** Seconds from the start of the load. */
  at: number;
  rssMiB: number;
  /** CPU time the process has used so far. */
  cpuSeconds: number;
  heapMiB: number;
  /** The event loop's delay, p99 since the previous sample (`nodejs_eventloop_lag_p99_seconds`). */
  lagP99Ms: number;
  /** The gateway's event-loop delay histograms so far: the delay, and its own part (absent before Node 23.9). */
  delayBuckets: Buckets;
  ownDelayBuckets?: Buckets;
  /** Since the previous sample, the p99 of the own delay: at most this (the bound of its bucket). */
  ownDelayP99Ms?: number;
  fds: number;
  sockets: number;
  functions: { rssMiB: number; cpuSeconds: number; fds: number; sockets: number };
  /** The gateway's gauges: objects it sees, timers and daemons it keeps, its oldest unhandled change. */
  objects: number;
  timers: number;
  daemons: number;
  oldestUnhandledSeconds: number;
  /** Totals so far: handler calls that succeeded, by handler; admission reviews answered. */
  calls: Record<string, number>;
  reviews: number;
  /** Of the soak: objects created so far, and live (created, not yet seen gone). */
  created: number;
  live: number;
  /** The soak's writes sent and not yet answered (each create waits for the apiserver's webhook calls). */
  writesInFlight: number;
}

/** One object's life as the soak saw it: when each write was sent and when its effect was seen (ms). */
interface Life {
  created?: number;
  createHandled?: number;
  admitted?: boolean;
  ticked?: boolean;
  updated?: number;
  updateHandled?: number;
  deleted?: number;
  gone?: number;
}

export interface Verdict {
  pass: boolean;
  detail: string;
}

export interface SoakResult {
  options: SoakOptions;
  samples: Sample[];
  objects: {
    created: number;
    writeErrors: string[];
    /** Objects missing a step, or late for one, by what they missed: how many, and up to 10 names. */
    unhandled: Record<string, { count: number; names: string[] }>;
    /** Seconds from each write to its effect seen, over every object: p50, p99, max. */
    createHandled: Quantiles;
    updateHandled: Quantiles;
    deleteHandled: Quantiles;
  };
  reviewsPerSecond: number;
  /** Of one core, after the warm-up: the gateway's and the function service's. */
  cpuPercent: { gateway: number; functions: number };
  /** The gateway before the load, and once every object was gone (absent if some never went). */
  idle: Sample;
  atRest?: Sample;
  verdicts: { rssFlat: Verdict; lag: Verdict; noStall: Verdict; fdsFlat: Verdict; atRest: Verdict };
}

interface Quantiles {
  p50: number;
  p99: number;
  max: number;
}

/** A histogram as the gateway serves it: runs counted so far, by upper bound in seconds (+Inf last), cumulative. */
export type Buckets = Array<[le: number, count: number]>;

/** RSS after the warm-up may grow by this much, from the first part of the measure to its last. */
const RSS_GROWTH = 0.1;
/** A bound of the gateway's event-loop buckets (EVENT_LOOP_BUCKETS), so that p99 from them is judged exactly. */
const LAG_P99_MS = 50;
/** Descriptors the last part may hold above the first: a pool's connection or two, not a leak. */
const FD_SLACK = 5;
const ADMITTED_LABEL = 'soak.causeway.dev/admitted';
const MERGE_PATCH = 'application/merge-patch+json';

/** The warm-up a run of `seconds` gets unless told: a tenth of it, at least 15 s. */
export function defaultWarmup(seconds: number): number {
  return Math.max(15, Math.round(seconds / 10));
}

/**
 * Runs the load against a gateway and function service already started, samples them, and judges.
 * Resolves once every object is gone, or the bound after the last deletion has passed.
 */
export async function soak(target: SoakTarget, options: SoakOptions): Promise<SoakResult> {
  const { client, namespace } = target;
  const path = `${KOPFEXAMPLES}/${namespace}/kopfexamples`;
  await admissionReady(client, path);
  const lives = new Map<string, Life>();
  const { watcher, listed } = watchKopfExamples(client, namespace, ({ type, object }) => {
    const life = lives.get(object.metadata?.name ?? '');
    if (!life) return;
    const now = performance.now();
    if (type === 'DELETED') {
      life.gone ??= now;
      return;
    }
    const status = (object.status ?? {}) as Record<string, { field?: string } | undefined>;
    if (status.create_fn) life.createHandled ??= now;
    // A create handled after the update saw the updated spec: no update is then left to handle.
    if (status.update_fn?.field === 'updated' || status.create_fn?.field === 'updated')
      life.updateHandled ??= now;
    if (status.tick) life.ticked = true;
    if (object.metadata?.labels?.[ADMITTED_LABEL] === 'true') life.admitted = true;
  });
  await listed;
  const idle = await sample(target, 0, 0, 0, 0);
  const writeErrors: string[] = [];
  // Writes still unanswered when the soak ends are given up, so that it ends within its bound.
  const ending = new AbortController();
  let inFlight = 0;
  /** One write; false when it failed (its object's later writes are not made). */
  const write = async (what: string, init: RequestInit, at = path): Promise<boolean> => {
    inFlight++;
    try {
      await client.request(at, { ...init, signal: ending.signal });
      return true;
    } catch (error) {
      writeErrors.push(`${what}: ${(error as Error).message}`);
      return false;
    } finally {
      inFlight--;
    }
  };
  const total = Math.round(options.seconds * options.rate);
  const lifetimeMs = options.lifetimeSeconds * 1000;
  const start = performance.now();
  const samples: Sample[] = [];
  let created = 0;
  let writes: Promise<unknown>[] = [];
  const life = async (name: string, due: number) => {
    const seen: Life = { created: performance.now() };
    lives.set(name, seen);
    created++;
    const body = { apiVersion: 'kopf.dev/v1', kind: 'KopfExample', metadata: { name }, spec: { field: 'a' } };
    if (!(await write(`create ${name}`, { method: 'POST', body }))) return;
    await sleepUntil(due + lifetimeMs / 2);
    seen.updated = performance.now();
    const update = { method: 'PATCH', contentType: MERGE_PATCH, body: { spec: { field: 'updated' } } };
    if (!(await write(`update ${name}`, update, `${path}/${name}`))) return;
    await sleepUntil(due + lifetimeMs);
    seen.deleted = performance.now();
    await write(`delete ${name}`, { method: 'DELETE' }, `${path}/${name}`);
  };
  const load = async () => {
    for (let index = 0; index < total && !target.gone(); index++) {
      const due = start + (index * 1000) / options.rate;
      await sleepUntil(due);
      writes.push(life(`soak-${String(index).padStart(6, '0')}`, due));
      // Settled writes need not be kept (an hour's would be 72,000 promises).
      if (writes.length > 1000) writes = [Promise.all(writes)];
    }
  };
  const sampling = (async () => {
    const allGone = () => created === total && [...lives.values()].every((life) => life.gone !== undefined);
    const last = start + (options.seconds + options.lifetimeSeconds + options.boundSeconds) * 1000;
    while (!target.gone() && !allGone() && performance.now() < last) {
      await sleep(
        options.sampleSeconds * 1000 - ((performance.now() - start) % (options.sampleSeconds * 1000)),
      );
      const live = [...lives.values()].filter((life) => life.gone === undefined).length;
      const taken = await sample(target, (performance.now() - start) / 1000, created, live, inFlight);
      const previous = samples.at(-1) ?? idle;
      if (taken.ownDelayBuckets)
        taken.ownDelayP99Ms = p99Between(previous.ownDelayBuckets, taken.ownDelayBuckets);
      samples.push(taken);
      // A line a minute, for a long run to show how it goes.
      if (Math.floor(taken.at / 60) > Math.floor((samples.at(-2)?.at ?? 0) / 60)) {
        say(
          `  ${taken.at.toFixed(0)} s: RSS ${taken.rssMiB} MiB, heap ${taken.heapMiB} MiB, lag p99 ${taken.lagP99Ms} ms ` +
            `(own at most ${taken.ownDelayP99Ms ?? '?'} ms), ` +
            `${taken.fds} fds (${taken.sockets} sockets), CPU ${taken.cpuSeconds} s, ` +
            `${taken.live} objects live, ${taken.writesInFlight} writes in flight, ${taken.reviews} reviews`,
        );
      }
    }
  })();
  try {
    await load();
    await sampling;
    ending.abort();
    await Promise.all(writes);
  } finally {
    ending.abort();
    watcher.stop();
  }
  if (target.gone()) throw new Error('the gateway exited during the soak');
  const allGone = [...lives.values()].every((life) => life.gone !== undefined);
  const atRest = allGone ? await rest(target, idle, options.boundSeconds * 1000) : undefined;
  return judge(options, samples, lives, writeErrors, created, idle, atRest);
}

/**
 * Once every object is gone: the gateway with no timer, no daemon, and no more descriptors than before
 * the load (idle keep-alive connections close within their timeout), or as it is after `timeoutMs`.
 */
async function rest(target: SoakTarget, idle: Sample, timeoutMs: number): Promise<Sample> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const now = await sample(target, 0, 0, 0, 0);
    if (
      (now.timers === 0 && now.daemons === 0 && now.fds <= idle.fds + FD_SLACK) ||
      performance.now() > deadline
    )
      return now;
    await sleep(500);
  }
}

/**
 * Waits until the apiserver calls the soak's mutating webhook: a server-side dry run of a create comes
 * back labelled (the webhook configurations reach the apiserver's cache a moment after they are made).
 */
async function admissionReady(client: KubeClient, path: string): Promise<void> {
  await until(
    'the mutating webhook to label a dry-run create',
    async () => {
      try {
        const body = {
          apiVersion: 'kopf.dev/v1',
          kind: 'KopfExample',
          metadata: { name: 'probe' },
          spec: {},
        };
        const answer = await client.request<KubernetesObject>(path, {
          method: 'POST',
          body,
          query: { dryRun: 'All' },
        });
        return answer.metadata?.labels?.[ADMITTED_LABEL] === 'true' || undefined;
      } catch {
        return undefined; // the webhook not served yet (failurePolicy: Fail)
      }
    },
    { timeoutMs: 60_000, intervalMs: 500 },
  );
}

async function sample(
  target: SoakTarget,
  at: number,
  created: number,
  live: number,
  writesInFlight: number,
): Promise<Sample> {
  const metrics = parseMetrics(await (await fetch(target.metricsUrl)).text());
  const sum = (name: string, match: (labels: string) => boolean = () => true) =>
    metrics
      .filter((each) => each.name === name && match(each.labels))
      .reduce((all, each) => all + each.value, 0);
  const calls: Record<string, number> = {};
  for (const each of metrics) {
    if (each.name !== 'causeway_handler_calls_total' || !each.labels.includes('outcome="success"')) continue;
    const handler = /handler="([^"]*)"/.exec(each.labels)?.[1] ?? '';
    calls[handler] = (calls[handler] ?? 0) + each.value;
  }
  const gateway = processUsage(target.gatewayPid);
  const functions = processUsage(target.functionsPid);
  return {
    at: round(at),
    rssMiB: round(gateway.rssMiB),
    cpuSeconds: round(gateway.cpuSeconds),
    heapMiB: round(sum('nodejs_heap_size_used_bytes') / 2 ** 20),
    lagP99Ms: round(sum('nodejs_eventloop_lag_p99_seconds') * 1000),
    delayBuckets: bucketsOf(metrics, 'causeway_eventloop_delay_seconds'),
    ...(metrics.some((each) => each.name === 'causeway_eventloop_own_delay_seconds_count')
      ? { ownDelayBuckets: bucketsOf(metrics, 'causeway_eventloop_own_delay_seconds') }
      : {}),
    ...openDescriptors(target.gatewayPid),
    functions: {
      rssMiB: round(functions.rssMiB),
      cpuSeconds: round(functions.cpuSeconds),
      ...openDescriptors(target.functionsPid),
    },
    objects: sum('causeway_objects'),
    timers: sum('causeway_timers'),
    daemons: sum('causeway_daemons'),
    oldestUnhandledSeconds: Math.max(
      0,
      ...metrics
        .filter((each) => each.name === 'causeway_oldest_unhandled_seconds')
        .map((each) => each.value),
    ),
    calls,
    reviews: sum('controller_runtime_webhook_requests_total', (labels) => labels.includes('code="200"')),
    created,
    live,
    writesInFlight,
  };
}

/** Prometheus text as samples: name, labels as written, value. */
function parseMetrics(text: string): Array<{ name: string; labels: string; value: number }> {
  return text.split('\n').flatMap((line) => {
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    return match ? [{ name: match[1] as string, labels: match[2] ?? '', value: Number(match[3]) }] : [];
  });
}

function bucketsOf(metrics: ReturnType<typeof parseMetrics>, name: string): Buckets {
  return metrics
    .filter((each) => each.name === `${name}_bucket`)
    .map((each): [number, number] => [Number(/le="([^"]*)"/.exec(each.labels)?.[1]), each.value])
    .sort(([a], [b]) => a - b);
}

/**
 * The 99th percentile of the runs counted between two scrapes of a histogram (from none: since the
 * start), as the bound of the bucket it falls in (ms): the p99 is at most this. NaN when no run was
 * counted (a gateway that serves no such histogram fails the verdict rather than pass it unmeasured).
 */
export function p99Between(from: Buckets | undefined, to: Buckets): number {
  const before = new Map(from);
  const counts = to.map(([le, count]): [number, number] => [le, count - (before.get(le) ?? 0)]);
  const all = counts.at(-1)?.[1] ?? 0;
  if (all === 0) return Number.NaN;
  const [le] = counts.find(([, count]) => count >= 0.99 * all) ?? [Number.POSITIVE_INFINITY];
  return round(le * 1000);
}

/** A process's open file descriptors, and how many of them are sockets. */
function openDescriptors(pid: number): { fds: number; sockets: number } {
  let fds = 0;
  let sockets = 0;
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      if (readlinkSync(`/proc/${pid}/fd/${fd}`).startsWith('socket:')) sockets++;
      fds++;
    } catch {
      // closed between the listing and the reading
    }
  }
  return { fds, sockets };
}

/** Until `at` (performance.now()), at once if it is past. */
const sleepUntil = (at: number) => sleep(Math.max(0, at - performance.now()));

const round = (value: number) => Math.round(value * 10) / 10;

function quantiles(values: number[]): Quantiles {
  const { p50, p99, max } = percentiles(values);
  return { p50: round(p50), p99: round(p99), max: round(max) };
}

/**
 * The verdicts, over the samples after the warm-up, whose first and last quarters are compared:
 * - RSS flat: the last quarter's median RSS at most 10% above the first's;
 * - lag: the gateway's own event-loop delay (docs/observability.md), p99 over the whole window at most
 *   50 ms, from the histogram it serves (where it serves none, before Node 23.9: the delay's, waits for
 *   a CPU included); the delay as it came is reported beside it;
 * - no stall: every object created was created, updated and deleted, each handled within the bound,
 *   labelled by the mutating webhook and ticked by its timer, and no write failed;
 * - descriptors flat: the last quarter's median descriptors and sockets at most 5 above the first's;
 * - at rest: once every object is gone, no timer, no daemon, and at most 5 descriptors more than
 *   before the load.
 */
function judge(
  options: SoakOptions,
  samples: Sample[],
  lives: Map<string, Life>,
  writeErrors: string[],
  created: number,
  idle: Sample,
  atRest: Sample | undefined,
): SoakResult {
  const loaded = samples.filter((each) => each.at > options.warmupSeconds && each.at <= options.seconds);
  const quarter = Math.max(1, Math.floor(loaded.length / 4));
  const first = loaded.slice(0, quarter);
  const last = loaded.slice(-quarter);
  const of = (part: Sample[], read: (each: Sample) => number) => median(part.map(read));
  const rssFirst = of(first, (each) => each.rssMiB);
  const rssLast = of(last, (each) => each.rssMiB);
  const growth = (rssLast - rssFirst) / rssFirst;
  const lags = loaded.map((each) => each.lagP99Ms);
  // The window's histograms: from the last sample of the warm-up to the last of the load.
  const windowStart = samples[samples.indexOf(loaded[0] as Sample) - 1] ?? idle;
  const windowEnd = loaded.at(-1) ?? windowStart;
  const delayP99 = p99Between(windowStart.delayBuckets, windowEnd.delayBuckets);
  const ownDelayP99 = windowEnd.ownDelayBuckets
    ? p99Between(windowStart.ownDelayBuckets, windowEnd.ownDelayBuckets)
    : undefined;
  const judgedLag = ownDelayP99 ?? delayP99;
  const fdsFirst = of(first, (each) => each.fds);
  const fdsLast = of(last, (each) => each.fds);
  const socketsFirst = of(first, (each) => each.sockets);
  const socketsLast = of(last, (each) => each.sockets);

  const boundMs = options.boundSeconds * 1000;
  const unhandled: Record<string, { count: number; names: string[] }> = {};
  const miss = (what: string, name: string) => {
    const missed = unhandled[what] ?? { count: 0, names: [] };
    unhandled[what] = {
      count: missed.count + 1,
      names: missed.names.length < 10 ? [...missed.names, name] : missed.names,
    };
  };
  const took = { create: [] as number[], update: [] as number[], delete: [] as number[] };
  for (const [name, life] of lives) {
    const step = (what: keyof typeof took, sent: number | undefined, seen: number | undefined) => {
      if (sent === undefined || seen === undefined) return miss(`${what} not handled`, name);
      took[what].push((seen - sent) / 1000);
      if (seen - sent > boundMs) miss(`${what} handled after ${options.boundSeconds} s`, name);
    };
    step('create', life.created, life.createHandled);
    // Deleted before its update was handled, an object gets its delete handler only (as in Kopf).
    if (life.updateHandled === undefined && life.gone !== undefined)
      miss('deleted before its update was handled', name);
    else step('update', life.updated, life.updateHandled);
    step('delete', life.deleted, life.gone);
    if (!life.admitted) miss('not labelled by the mutating webhook', name);
    if (!life.ticked) miss('not ticked by its timer', name);
  }
  const missed = Object.entries(unhandled);
  const reviews = (samples.at(-1)?.reviews ?? 0) - (first[0]?.reviews ?? 0);
  const reviewSeconds = (samples.at(-1)?.at ?? 0) - (first[0]?.at ?? 0);
  const cpuPercent = (read: (each: Sample) => number) => {
    const [from, to] = [loaded[0], loaded.at(-1)];
    return from && to && to.at > from.at
      ? round((100 * (read(to) - read(from))) / (to.at - from.at))
      : Number.NaN;
  };
  return {
    options,
    samples,
    idle,
    ...(atRest ? { atRest } : {}),
    objects: {
      created,
      writeErrors: writeErrors.slice(0, 20),
      unhandled,
      createHandled: quantiles(took.create),
      updateHandled: quantiles(took.update),
      deleteHandled: quantiles(took.delete),
    },
    reviewsPerSecond: round(reviews / reviewSeconds),
    cpuPercent: {
      gateway: cpuPercent((each) => each.cpuSeconds),
      functions: cpuPercent((each) => each.functions.cpuSeconds),
    },
    verdicts: {
      rssFlat: {
        pass: growth <= RSS_GROWTH,
        detail: `RSS ${rssFirst} MiB after the warm-up, ${rssLast} MiB at the end (${(growth * 100).toFixed(1)}%; at most +${RSS_GROWTH * 100}%)`,
      },
      lag: {
        pass: judgedLag <= LAG_P99_MS,
        detail:
          (ownDelayP99 === undefined
            ? `own event-loop delay not served (Node before 23.9): the delay judged, waits for a CPU included: `
            : `the gateway's own event-loop delay p99 at most ${ownDelayP99} ms `) +
          `over the ${round(windowEnd.at - windowStart.at)} s after the warm-up (at most ${LAG_P99_MS} ms); ` +
          `waits for a CPU included: p99 at most ${delayP99} ms over the window, and the samples' ` +
          `nodejs_eventloop_lag_p99_seconds ${median(lags)} ms at the median, ${Math.max(...lags)} ms at most, ` +
          `over ${LAG_P99_MS} ms in ${lags.filter((lag) => lag > LAG_P99_MS).length} of ${lags.length}`,
      },
      noStall: {
        pass: missed.length === 0 && writeErrors.length === 0 && created > 0,
        detail:
          missed.length === 0 && writeErrors.length === 0
            ? `all ${created} objects created, updated and deleted, each step handled within ${options.boundSeconds} s`
            : [
                ...missed.map(([what, { count, names }]) => `${what}: ${count} (${names.join(', ')}, …)`),
                ...writeErrors.slice(0, 5),
              ].join('; '),
      },
      fdsFlat: {
        pass: fdsLast <= fdsFirst + FD_SLACK && socketsLast <= socketsFirst + FD_SLACK,
        detail: `descriptors ${fdsFirst} after the warm-up, ${fdsLast} at the end; sockets ${socketsFirst}, ${socketsLast} (at most +${FD_SLACK})`,
      },
      atRest: atRest
        ? {
            pass: atRest.timers === 0 && atRest.daemons === 0 && atRest.fds <= idle.fds + FD_SLACK,
            detail:
              `once every object was gone: ${atRest.timers} timers, ${atRest.daemons} daemons, ` +
              `${atRest.fds} descriptors (${idle.fds} before the load, at most +${FD_SLACK}), RSS ${atRest.rssMiB} MiB`,
          }
        : { pass: false, detail: 'not every object was gone by the end' },
    },
  };
}

export function report(result: SoakResult): void {
  const { objects, verdicts } = result;
  say(
    `\n${objects.created} objects in ${result.options.seconds} s, ${result.reviewsPerSecond} admission reviews/s; ` +
      `seconds to handled (p50 / p99 / max): create ${describe(objects.createHandled)}, ` +
      `update ${describe(objects.updateHandled)}, delete ${describe(objects.deleteHandled)}; ` +
      `CPU after the warm-up: gateway ${result.cpuPercent.gateway}%, function service ${result.cpuPercent.functions}%`,
  );
  const series = (what: string, read: (each: Sample) => number) =>
    say(`${what}, sample by sample: ${result.samples.map(read).join(' ')}`);
  series('gateway RSS MiB', (each) => each.rssMiB);
  series('gateway heap MiB', (each) => each.heapMiB);
  series('gateway lag p99 ms', (each) => each.lagP99Ms);
  series('gateway own delay p99 ms (at most)', (each) => each.ownDelayP99Ms ?? Number.NaN);
  series('gateway descriptors', (each) => each.fds);
  series('objects live', (each) => each.live);
  for (const line of table(
    ['verdict', 'pass', 'measured'],
    Object.entries(verdicts).map(([name, verdict]) => [name, verdict.pass ? 'yes' : 'NO', verdict.detail]),
  ))
    say(line);
}

const describe = (q: Quantiles) => `${q.p50} / ${q.p99} / ${q.max}`;

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      minutes: { type: 'string', default: '60' },
      rate: { type: 'string', default: '20' },
      lifetime: { type: 'string', default: '6' },
      'timer-interval': { type: 'string', default: '3' },
      'sample-seconds': { type: 'string', default: '5' },
      'warmup-seconds': { type: 'string' },
      'bound-seconds': { type: 'string', default: '10' },
    },
  });
  const seconds = Number(values.minutes) * 60;
  const options: SoakOptions = {
    seconds,
    rate: Number(values.rate),
    lifetimeSeconds: Number(values.lifetime),
    warmupSeconds:
      values['warmup-seconds'] === undefined ? defaultWarmup(seconds) : Number(values['warmup-seconds']),
    sampleSeconds: Number(values['sample-seconds']),
    boundSeconds: Number(values['bound-seconds']),
  };
  const commands = await prepareContenders();
  await withCluster(async ({ controlPlane, client }) => {
    const namespace = 'soak';
    await createNamespace(client, namespace);
    const [functionsPort, metricsPort] = (await freePorts(2)) as [number, number];
    const running = await startTogether(
      [
        withArgs(commands.causewayGateway(functionsPort, namespace), [
          '--metrics',
          `127.0.0.1:${metricsPort}`,
        ]),
        commands.causewayServe('causeway-soak.ts', functionsPort),
      ],
      { client, kubeconfig: controlPlane.kubeconfigPath, namespace },
      { BENCH_TIMER_INTERVAL: values['timer-interval'] as string },
    );
    try {
      say(`soak: ${options.rate} objects/s for ${values.minutes} min, warm-up ${options.warmupSeconds} s`);
      const result = await soak(soakTarget(running, { client, namespace, metricsPort }), options);
      report(result);
      await saveResults('soak', { timerIntervalSeconds: Number(values['timer-interval']), ...result });
    } finally {
      await running.stop();
    }
  });
}

if (import.meta.main) await main();
