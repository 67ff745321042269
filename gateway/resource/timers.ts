/**
 * Kopf's timers: a handler called every `interval` seconds for each object it matches, while the
 * object exists and matches, never overlapping itself on one object. One scheduler holds every
 * object's next call (no Node timer per object). The calls go through the one call path; what a call
 * returns is written only where it changes the object, so timers on idle objects cost calls, not
 * writes. Kept in memory: after a restart every timer starts again, from its initial delay.
 *
 * Errors: a temporary one calls again after its delay (counting `retry`) until the handler's
 * `retries` or `timeout` run out; a permanent one, or running out, stops the timer on that object
 * until the object changes. Timers hold no finalizer: there is nothing to wait for on a deletion.
 */
import { createHash } from 'node:crypto';
import type { DueHandler, HandlerSpec, KubernetesObject, Outcome } from '../../protocol/index.ts';
import { callServices, idempotencyKey, type RetryDelays } from '../dispatch/calls.ts';
import type { FunctionService } from '../dispatch/function-service.ts';
import type { WatchEventType } from '../kube/watcher.ts';
import type { Logger } from '../logging.ts';
import type { ReactorApi } from '../reactor/api.ts';
import type { ObjectMemory } from '../reactor/memory.ts';
import { candidatesOf, objectName, type ServedResource } from '../reactor/model.ts';
import { type CycleEffects, collectEffects, emptyEffects } from '../reactor/outcomes.ts';
import { othersResultKeys, placeResult, resultPath } from '../reactor/places.ts';
import { exhaustion } from '../reactor/plan.ts';
import { essenceOf, serializeEssence } from '../state/essence.ts';
import { handlerKey, matchingHandlers, stillBound, writeEffects } from './background.ts';
import { Scheduler } from './scheduler.ts';

export interface TimersOptions {
  served: ServedResource;
  api: ReactorApi;
  /** The reactor's memory of objects: timers read and update the same memo as other handlers. */
  memory: ObjectMemory;
  /** Seconds before calling again a service that could not be reached or answered badly, by retry. */
  retryDelaysS: RetryDelays;
  /** Timer calls in flight at once for this resource; the others wait their turn. */
  concurrency: number;
  /** Our annotations, which are not a change of the object (see essence.ts). */
  annotationPrefix: string;
  /** The gateway's key in the status: results of an id several services bind land in it (places.ts). */
  statusKey: string;
  logger: Logger;
}

/**
 * One timer handler on one object. Its optional fields are cleared with undefined, never deleted: V8
 * keeps an object a property was deleted from as a hash table, and there is one per object.
 */
interface Timer {
  object: Watched;
  service: FunctionService;
  spec: HandlerSpec;
  /** When the first call was due: a sharp timer keeps its cadence from there. */
  anchor?: number;
  /** While failing: the attempt number and when the failing call was first made. */
  failing?: { retry: number; started: string; key: string };
  /** Stopped by a permanent failure: not called again until the essence differs from this one. */
  haltedAt?: string;
}

/**
 * An object some timer matches: its newest state, and when its essence last changed (for `idle`: as
 * in Kopf, a status written, by a timer's own result say, is no change).
 */
interface Watched {
  latest: KubernetesObject;
  changedAt: number;
  /** A digest of its essence, kept while a timer with `idle` matches it. */
  essence?: string;
  timers: Map<string, Timer>;
  gone: boolean;
}

export class Timers {
  readonly #options: TimersOptions;
  readonly #objects = new Map<string, Watched>();
  readonly #scheduler: Scheduler<Timer>;
  /** Due calls waiting for a free slot, oldest first. */
  readonly #waiting: Timer[][] = [];
  readonly #active = new Set<Promise<void>>();
  #stopped = false;

  constructor(options: TimersOptions) {
    this.#options = options;
    this.#scheduler = new Scheduler((due) => this.#due(due));
  }

  /** Timers kept now, over every object: each calls its handler when its interval has passed. */
  get count(): number {
    let count = 0;
    for (const watched of this.#objects.values()) count += watched.timers.size;
    return count;
  }

  /** Every watch event: starts, re-times and stops the object's timers. */
  observe(type: WatchEventType, object: KubernetesObject): void {
    if (this.#stopped) return;
    const uid = object.metadata.uid;
    const now = Date.now();
    const matching = type === 'DELETED' ? [] : matchingHandlers(this.#options.served, 'timer', object);
    let watched = this.#objects.get(uid);
    if (!watched) {
      if (matching.length === 0) return;
      watched = { latest: object, changedAt: now, timers: new Map(), gone: false };
      this.#objects.set(uid, watched);
    }
    watched.latest = object;
    if (matching.some(({ spec }) => spec.options?.idle !== undefined)) {
      const essence = essenceDigest(object, this.#options.annotationPrefix);
      if (essence !== watched.essence) watched.changedAt = now;
      watched.essence = essence;
    } else {
      watched.changedAt = now;
      watched.essence = undefined;
    }
    const keep = new Set(matching.map(handlerKey));
    for (const [key, timer] of watched.timers) {
      if (!keep.has(key)) this.#drop(watched, key, timer);
    }
    let essence: string | undefined;
    for (const { service, spec } of matching) {
      const key = handlerKey({ service, spec });
      const timer = watched.timers.get(key);
      if (!timer) {
        const started: Timer = { object: watched, service, spec };
        watched.timers.set(key, started);
        this.#scheduler.schedule(started, now + (spec.options?.initialDelay ?? 0) * 1000);
      } else if (timer.haltedAt !== undefined) {
        essence ??= serializeEssence(essenceOf(object, this.#options.annotationPrefix));
        if (essence !== timer.haltedAt) {
          timer.haltedAt = undefined;
          this.#scheduler.schedule(timer, now); // halted, so not running
        }
      }
    }
    if (watched.timers.size === 0) this.#forget(uid, watched);
  }

  /** Stops scheduling and waits for the calls in flight. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#scheduler.stop();
    this.#waiting.length = 0;
    await Promise.all(this.#active);
  }

  #drop(watched: Watched, key: string, timer: Timer): void {
    this.#scheduler.cancel(timer);
    watched.timers.delete(key);
  }

  #forget(uid: string, watched: Watched): void {
    watched.gone = true;
    this.#objects.delete(uid);
  }

  /** Timers whose time has come: those that must still wait for the object to be idle wait on. */
  #due(timers: Timer[]): void {
    const now = Date.now();
    const byCall = new Map<string, Timer[]>();
    for (const timer of timers) {
      if (!this.#live(timer)) continue;
      const idleAt = idleUntil(timer.spec, timer.object.changedAt);
      if (idleAt > now) {
        this.#scheduler.schedule(timer, idleAt);
        continue;
      }
      // Timers of one object and service due together make one call.
      const key = `${timer.object.latest.metadata.uid}\0${timer.service.name}`;
      byCall.set(key, [...(byCall.get(key) ?? []), timer]);
    }
    this.#waiting.push(...byCall.values());
    this.#pump();
  }

  #pump(): void {
    while (!this.#stopped && this.#active.size < this.#options.concurrency && this.#waiting.length > 0) {
      const call = this.#waiting.shift() as Timer[];
      const running = this.#fire(call);
      this.#active.add(running);
      void running.finally(() => {
        this.#active.delete(running);
        this.#pump();
      });
    }
  }

  /** Whether the timer is still one of its object's and its handler still bound. */
  #live(timer: Timer): boolean {
    return (
      !timer.object.gone &&
      timer.object.timers.get(handlerKey(timer)) === timer &&
      stillBound(this.#options.served, timer)
    );
  }

  async #fire(timers: Timer[]): Promise<void> {
    const { served, memory, logger } = this.#options;
    const object = (timers[0] as Timer).object;
    const service = (timers[0] as Timer).service;
    const uid = object.latest.metadata.uid;
    const log = logger.child({ object: objectName(object.latest) });
    const startedAt = Date.now();
    const started = new Date(startedAt).toISOString();
    const handlers = timers.map((timer): DueHandler => {
      timer.anchor ??= startedAt;
      timer.failing ??= {
        retry: 0,
        started,
        key: idempotencyKey(uid, timer.spec.id, 'timer', started, timer.service.name),
      };
      const { retry, key } = timer.failing;
      return { id: timer.spec.id, retry, started: timer.failing.started, idempotencyKey: key };
    });
    const [answer] = await callServices(
      [{ service, handlers }],
      {
        reason: 'timer',
        resource: served.resource,
        object: object.latest,
        memoOf: (name) => memory.memoOf(uid, name),
        othersResults: (one) => othersResultKeys(candidatesOf(served), one),
      },
      this.#options.retryDelaysS,
      log,
    );
    if (answer?.memo) memory.updateMemo(uid, service.name, answer.memo);
    const effects = emptyEffects();
    const finishedAt = Date.now();
    for (const timer of timers) {
      const outcome = answer?.outcomes[timer.spec.id];
      // A service that is down has no outcome: try again at the next interval.
      const next = outcome ? this.#settle(timer, outcome, effects, log) : 'interval';
      if (next === 'halt' || !this.#live(timer)) continue;
      const at =
        next === 'interval' ? nextCallAt(timer.spec, timer.anchor as number, startedAt, finishedAt) : next;
      this.#scheduler.schedule(timer, at);
    }
    await writeEffects(this.#options.api, object.latest, effects, log);
  }

  /**
   * What one outcome means: results and effects collected, and when to call next (`interval`, a
   * retry's time, or `halt` until the object changes).
   */
  #settle(timer: Timer, outcome: Outcome, effects: CycleEffects, log: Logger): 'interval' | 'halt' | number {
    const { spec, object } = timer;
    const failing = timer.failing as NonNullable<Timer['failing']>;
    collectEffects(effects, outcome, failing.key);
    const halt = (message: string) => {
      log.error('timer stopped until the object changes', { handler: spec.id, err: message });
      effects.events.push({ type: 'Warning', reason: 'HandlerFailed', message: `${spec.id} ${message}` });
      timer.haltedAt = serializeEssence(essenceOf(object.latest, this.#options.annotationPrefix));
      timer.failing = undefined;
      return 'halt' as const;
    };
    switch (outcome.status) {
      case 'success':
        timer.failing = undefined;
        if (outcome.result !== undefined && outcome.result !== null) {
          const { served, statusKey } = this.#options;
          const path = resultPath(candidatesOf(served), timer.service, spec.id, statusKey);
          placeResult(effects.changes.status, path, outcome.result);
          effects.results.push(path);
        }
        return 'interval';
      case 'skipped':
        timer.failing = undefined;
        return 'interval';
      case 'temporary': {
        const retries = failing.retry + 1;
        const exhausted = exhaustion(spec, { started: failing.started, retries }, new Date());
        if (exhausted) return halt(`failed: ${outcome.message} (${exhausted})`);
        failing.retry = retries;
        log.warning('timer failed temporarily', {
          handler: spec.id,
          delaySeconds: outcome.delay,
          err: outcome.message,
        });
        return Date.now() + outcome.delay * 1000;
      }
      case 'permanent':
      case 'denied':
        return halt(`failed permanently: ${outcome.message}`);
    }
  }
}

/** A short digest of the object's essence: what tells a change from a status write, at little memory. */
function essenceDigest(object: KubernetesObject, annotationPrefix: string): string {
  return createHash('sha1')
    .update(serializeEssence(essenceOf(object, annotationPrefix)))
    .digest('base64');
}

/** When an object that changed at `changedAt` has been idle long enough for the timer (epoch ms). */
export function idleUntil(spec: HandlerSpec, changedAt: number): number {
  return changedAt + (spec.options?.idle ?? 0) * 1000;
}

/**
 * When a timer whose call started at `startedAt` and ended at `finishedAt` is called next: an
 * interval after the end, or for a sharp timer, at the first tick of its cadence (from `anchor`)
 * after the end, skipping the ticks the call overran.
 */
export function nextCallAt(spec: HandlerSpec, anchor: number, startedAt: number, finishedAt: number): number {
  const interval = (spec.options?.interval ?? 0) * 1000;
  if (!spec.options?.sharp) return finishedAt + interval;
  if (interval <= 0) return finishedAt;
  const ticks = Math.floor((Math.max(finishedAt, startedAt) - anchor) / interval) + 1;
  return anchor + ticks * interval;
}
