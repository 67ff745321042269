/**
 * Runs processing cycles for many objects at once but never two for the same object: each object
 * has a slot that holds only its newest unprocessed state. A cycle never works on a state older than
 * the gateway's own last write: after a write the object waits until the watch delivers that write
 * (older states it delivers meanwhile are dropped, however late they come), or, if the watch lags
 * beyond a timeout, until the object is read afresh from the API. A cycle that failed is not run again
 * on the state it failed with, which its writes may have changed even if their answer was lost: the
 * object is read afresh first, unless the watch shows a newer state meanwhile.
 */
import type { KubernetesObject } from '../../protocol/index.ts';
import { ApiUnreachable } from '../kube/reachability.ts';
import type { WatchEventType } from '../kube/watcher.ts';
import type { Logger } from '../logging.ts';
import type { Settings } from '../settings.ts';
import { backoffDelay, MAX_TIMER_MS } from '../timing.ts';
import { type CycleOutcome, objectName } from './model.ts';

export type Processor = (object: KubernetesObject) => Promise<CycleOutcome>;

/** Reads the object as it is now; undefined when it is gone. */
export type Refresh = (object: KubernetesObject) => Promise<KubernetesObject | undefined>;

/** What the metrics read of a queue when scraped. */
export interface QueueReadings {
  readonly depth: number;
  oldestUnhandledSeconds(): number;
}

/** Told what the queue does (the metrics'). */
export interface QueueObserver {
  added(): void;
  /** A cycle started after the object waited `waitedMs` in the queue. */
  started(waitedMs: number): void;
  /** A cycle ended: `requeue_after` when it is to run again later, `error` when it failed. */
  finished(result: 'success' | 'error' | 'requeue_after', tookMs: number): void;
}

export interface QueueOptions
  extends Pick<Settings['processing'], 'concurrency' | 'consistencyTimeoutMs' | 'errorDelaysS'> {
  process: Processor;
  refresh: Refresh;
  /** Resolves once the Kubernetes API is back after it did not answer (ApiComeback), or when `signal` aborts. */
  apiBack(signal: AbortSignal): Promise<void>;
  logger: Logger;
  observer?: QueueObserver;
}

interface Slot {
  key: string;
  latest: KubernetesObject | undefined;
  running: boolean;
  queued: boolean;
  /** Waiting for the watch to show our write; the timer reads the object afresh if it does not. */
  awaiting: NodeJS.Timeout | undefined;
  retry: NodeJS.Timeout | undefined;
  /**
   * Waiting for a function service that is down, or for the Kubernetes API to answer again: runs again
   * (with its newest state) when it is back.
   */
  parked: boolean;
  /** The watch showed its deletion: a cycle or read still under way then leaves nothing to follow. */
  gone: boolean;
  failures: number;
  /** Cycles started: a read that began before the last one started is superseded by what it ran on. */
  cycles: number;
  /** When it was last queued (performance.now()). */
  queuedAt: number;
  /** Since when a change of it has waited to be handled (performance.now()); undefined once none does. */
  pendingSince: number | undefined;
}

/** A state the watch has not delivered yet; those before it are stale, and so is it once processed. */
interface Floor {
  resourceVersion: string;
  processed: boolean;
}

export class ObjectQueue implements QueueReadings {
  readonly #options: QueueOptions;
  readonly #slots = new Map<string, Slot>();
  /**
   * uid → the resourceVersion of our newest write that the watch has not delivered yet. Kept apart from
   * the slots, which are forgotten when idle, because a lagging watch delivers the states before that
   * write later still, and each of them would look like an unhandled change.
   */
  readonly #floors = new Map<string, Floor>();
  readonly #ready: Slot[] = [];
  readonly #active = new Set<Promise<void>>();
  #stopped = false;
  /** Ends the waits for the API at stop. */
  readonly #stopping = new AbortController();

  constructor(options: QueueOptions) {
    this.#options = options;
  }

  /** Number of objects with work pending or in progress. */
  get size(): number {
    return this.#slots.size;
  }

  /** Objects waiting for a cycle now: not those in one, nor those waiting for a delay or a write. */
  get depth(): number {
    return this.#ready.length;
  }

  /**
   * How long the oldest change not handled yet has waited, in seconds: queued, in a cycle, retried
   * later, or waiting for a function service that is down; 0 when none waits.
   */
  oldestUnhandledSeconds(): number {
    let oldest = Number.POSITIVE_INFINITY;
    for (const slot of this.#slots.values())
      if (slot.pendingSince !== undefined && slot.pendingSince < oldest) oldest = slot.pendingSince;
    return oldest === Number.POSITIVE_INFINITY ? 0 : (performance.now() - oldest) / 1000;
  }

  push(type: WatchEventType, object: KubernetesObject): void {
    if (this.#stopped) return;
    const key = object.metadata.uid;
    const floor = this.#floors.get(key);
    if (floor !== undefined) {
      const version = object.metadata.resourceVersion;
      const stale =
        isOlder(version, floor.resourceVersion) || (floor.processed && version === floor.resourceVersion);
      if (type !== 'DELETED' && stale) return;
      this.#floors.delete(key);
    }
    let slot = this.#slots.get(key);
    if (type === 'DELETED') {
      if (!slot) return;
      this.#cancelWaits(slot);
      slot.latest = undefined;
      slot.gone = true;
      this.#forgetIfIdle(slot);
      return;
    }
    if (!slot) {
      slot = {
        key,
        latest: undefined,
        running: false,
        queued: false,
        awaiting: undefined,
        retry: undefined,
        parked: false,
        gone: false,
        failures: 0,
        cycles: 0,
        queuedAt: 0,
        pendingSince: undefined,
      };
      this.#slots.set(key, slot);
    }
    slot.latest = object;
    slot.pendingSince ??= performance.now();
    // Whatever passed the floor is our write or newer.
    clearTimeout(slot.awaiting);
    slot.awaiting = undefined;
    this.#schedule(slot);
  }

  /** Stops taking work and waits for the cycles in progress. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#stopping.abort();
    for (const slot of this.#slots.values()) this.#cancelWaits(slot);
    this.#ready.length = 0;
    await Promise.all(this.#active);
  }

  #schedule(slot: Slot): void {
    if (
      this.#stopped ||
      slot.running ||
      slot.queued ||
      slot.awaiting ||
      slot.retry ||
      slot.parked ||
      !slot.latest
    )
      return;
    slot.queued = true;
    slot.queuedAt = performance.now();
    this.#ready.push(slot);
    this.#options.observer?.added();
    this.#pump();
  }

  #pump(): void {
    while (this.#active.size < this.#options.concurrency && this.#ready.length > 0) {
      const slot = this.#ready.shift() as Slot;
      slot.queued = false;
      this.#options.observer?.started(performance.now() - slot.queuedAt);
      const cycle = this.#run(slot);
      this.#active.add(cycle);
      void cycle.finally(() => {
        this.#active.delete(cycle);
        this.#pump();
      });
    }
  }

  async #run(slot: Slot): Promise<void> {
    const object = slot.latest;
    if (!object) return this.#forgetIfIdle(slot);
    slot.latest = undefined;
    slot.running = true;
    slot.cycles++;
    const started = performance.now();
    let outcome: CycleOutcome | undefined;
    let failure: unknown;
    try {
      outcome = await this.#options.process(object);
      slot.failures = 0;
    } catch (error) {
      failure = error;
    } finally {
      slot.running = false;
    }
    const result = !outcome ? 'error' : outcome.retryAfterMs !== undefined ? 'requeue_after' : 'success';
    this.#options.observer?.finished(result, performance.now() - started);
    if (this.#stopped) return;
    // Deleted meanwhile: no write to wait for, nothing to try again or read afresh.
    if (slot.gone) return this.#forgetIfIdle(slot);
    if (outcome) this.#follow(slot, object, outcome);
    else this.#failed(slot, object, failure);
    // Handled, unless it runs again (a newer state, a retry, a service or the API to come back).
    if (!slot.latest && !slot.retry && !slot.parked) slot.pendingSince = undefined;
    this.#forgetIfIdle(slot);
    this.#schedule(slot);
  }

  /** What a cycle that ended asks for: to wait for its write to show, to run again later or once a service is back. */
  #follow(slot: Slot, object: KubernetesObject, outcome: CycleOutcome): void {
    if (outcome.written) this.#awaitWrite(slot, object, outcome.written);
    else if (outcome.retryAfterMs !== undefined || outcome.wakeOn) slot.latest ??= object;
    if (outcome.wakeOn) {
      slot.parked = true;
      void outcome.wakeOn.then(() => {
        slot.parked = false;
        if (this.#wanted(slot)) this.#schedule(slot);
      });
    }
    if (outcome.retryAfterMs !== undefined) {
      slot.retry = setTimeout(
        () => {
          slot.retry = undefined;
          this.#schedule(slot);
          // Longer than a timer holds: woken sooner, the cycle finds nothing due yet and waits again.
        },
        Math.min(outcome.retryAfterMs, MAX_TIMER_MS),
      );
    }
  }

  /**
   * A cycle that failed: tried again after a delay that grows with its failures in a row, or, when the
   * API did not answer, once it does (not the object's failure, so not counted), from the object read
   * afresh.
   */
  #failed(slot: Slot, object: KubernetesObject, error: unknown): void {
    const log = this.#options.logger.child({ object: objectName(object) });
    if (error instanceof ApiUnreachable) {
      // The log of reachability says it once for all objects.
      log.debug('processing waits for the Kubernetes API to answer', { err: error });
      this.#untilApiBack(slot, () => void this.#refresh(slot, object));
      return;
    }
    const delay = backoffDelay({ delays: this.#options.errorDelaysS }, slot.failures);
    slot.failures++;
    log.error('processing failed', { delaySeconds: delay, err: error });
    slot.retry = setTimeout(() => {
      slot.retry = undefined;
      if (slot.latest) this.#schedule(slot);
      else void this.#refresh(slot, object);
    }, delay * 1000);
  }

  /** Parks the slot until the API answers, then runs its newest state if the watch showed one, or `then`. */
  #untilApiBack(slot: Slot, then: () => void): void {
    slot.parked = true;
    void this.#options.apiBack(this.#stopping.signal).then(() => {
      slot.parked = false;
      if (!this.#wanted(slot)) return;
      if (slot.latest) this.#schedule(slot);
      else then();
    });
  }

  /** After our write: states older than it are stale, whether pushed already or still to come. */
  #awaitWrite(slot: Slot, object: KubernetesObject, written: string): void {
    const newest = slot.latest;
    // The watch may have shown our write, or something newer, while the request was still returning.
    if (newest && !isOlder(newest.metadata.resourceVersion, written)) return;
    slot.latest = undefined;
    this.#floors.set(slot.key, { resourceVersion: written, processed: false });
    slot.awaiting = setTimeout(
      () => void this.#refresh(slot, object, written),
      this.#options.consistencyTimeoutMs,
    );
  }

  /**
   * Reads the object afresh and runs it: after our write, when the watch lags behind it (`written`), or
   * after a failed cycle.
   */
  async #refresh(slot: Slot, object: KubernetesObject, written?: string, failures = 0): Promise<void> {
    slot.awaiting = undefined;
    const log = this.#options.logger.child({ object: objectName(object) });
    if (written !== undefined)
      log.debug('the watch has not shown our write yet: reading the object afresh', {
        resourceVersion: written,
      });
    // Unwanted now, or the watch caught up meanwhile: a state it showed is queued or has run.
    const cyclesBefore = slot.cycles;
    const superseded = () => !this.#wanted(slot) || slot.latest !== undefined || slot.cycles !== cyclesBefore;
    let fresh: KubernetesObject | undefined;
    try {
      fresh = await this.#options.refresh(object);
    } catch (error) {
      if (superseded()) return;
      if (error instanceof ApiUnreachable) {
        log.debug('reading the object waits for the Kubernetes API to answer', { err: error });
        this.#untilApiBack(slot, () => void this.#refresh(slot, object, written));
        return;
      }
      const delay = backoffDelay({ delays: this.#options.errorDelaysS }, failures);
      log.warning('reading the object failed', { delaySeconds: delay, err: error });
      slot.awaiting = setTimeout(() => void this.#refresh(slot, object, written, failures + 1), delay * 1000);
      return;
    }
    if (superseded()) return;
    // Gone: the floor stays until the watch shows the deletion, since it may show older states first.
    if (!fresh) return this.#forgetIfIdle(slot);
    this.#floors.set(slot.key, {
      resourceVersion: fresh.metadata.resourceVersion ?? written ?? '',
      processed: true,
    });
    slot.latest = fresh;
    slot.pendingSince ??= performance.now();
    this.#schedule(slot);
  }

  /** Ends its waits: for a delay, for the watch, for a service or the API to come back (which then find it forgotten). */
  #cancelWaits(slot: Slot): void {
    clearTimeout(slot.awaiting);
    clearTimeout(slot.retry);
    slot.awaiting = undefined;
    slot.retry = undefined;
    slot.parked = false;
  }

  /**
   * Whether what a slot waited for (a service, the API, a read) still leads somewhere: not once the queue
   * stopped or the object is deleted, nor once the slot was forgotten as idle (a newer one may hold the
   * object).
   */
  #wanted(slot: Slot): boolean {
    return !this.#stopped && !slot.gone && this.#slots.get(slot.key) === slot;
  }

  #forgetIfIdle(slot: Slot): void {
    if (!slot.running && !slot.queued && !slot.latest && !slot.awaiting && !slot.retry && !slot.parked)
      this.#slots.delete(slot.key);
  }
}

/**
 * Whether resourceVersion `a` is older than `b`. The API calls them opaque, but etcd-backed servers
 * (every built-in and custom resource) issue increasing integers; others are never called older.
 */
export function isOlder(a: string | undefined, b: string): boolean {
  return a !== undefined && /^\d+$/.test(a) && /^\d+$/.test(b) && BigInt(a) < BigInt(b);
}
