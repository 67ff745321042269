/**
 * Runs processing cycles for many objects at once but never two for the same object: each object
 * has a slot that holds only its newest unprocessed state. After a cycle wrote to the object, the
 * next cycle waits until the watch has delivered that write (so it never works on a stale copy),
 * or until a timeout in case the watch lost it.
 */
import type { KubernetesObject } from '../protocol/index.ts';
import type { WatchEventType } from './kube/watcher.ts';
import type { Logger } from './logging.ts';

export interface CycleOutcome {
  /** resourceVersion of the object after the cycle's write, if it wrote. */
  written?: string;
  /** Run again after this long with the newest state, even if nothing changes. */
  retryAfterMs?: number;
}

export type Processor = (object: KubernetesObject) => Promise<CycleOutcome>;

export interface QueueOptions {
  concurrency: number;
  process: Processor;
  logger: Logger;
  /** How long to wait for the watch to show our own write before going on without it. */
  consistencyTimeoutMs?: number;
}

interface Slot {
  key: string;
  latest: KubernetesObject | undefined;
  running: boolean;
  queued: boolean;
  awaiting: { resourceVersion: string; timer: NodeJS.Timeout } | undefined;
  retry: NodeJS.Timeout | undefined;
  failures: number;
}

/** Fibonacci delays for cycles that failed unexpectedly (API trouble), capped near ten minutes. */
const ERROR_DELAYS_S = [1, 1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 233, 377, 610];

export class ObjectQueue {
  readonly #options: Required<QueueOptions>;
  readonly #slots = new Map<string, Slot>();
  readonly #ready: Slot[] = [];
  readonly #active = new Set<Promise<void>>();
  #stopped = false;

  constructor(options: QueueOptions) {
    this.#options = { consistencyTimeoutMs: 5000, ...options };
  }

  /** Number of objects with work pending or in progress. */
  get size(): number {
    return this.#slots.size;
  }

  push(type: WatchEventType, object: KubernetesObject): void {
    if (this.#stopped) return;
    const key = object.metadata.uid;
    let slot = this.#slots.get(key);
    if (type === 'DELETED') {
      if (!slot) return;
      this.#cancelTimers(slot);
      slot.latest = undefined;
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
        failures: 0,
      };
      this.#slots.set(key, slot);
    }
    slot.latest = object;
    const awaiting = slot.awaiting;
    if (awaiting && awaiting.resourceVersion === object.metadata.resourceVersion) {
      clearTimeout(awaiting.timer);
      slot.awaiting = undefined;
    }
    this.#schedule(slot);
  }

  /** Stops taking work and waits for the cycles in progress. */
  async stop(): Promise<void> {
    this.#stopped = true;
    for (const slot of this.#slots.values()) this.#cancelTimers(slot);
    this.#ready.length = 0;
    await Promise.all(this.#active);
  }

  #schedule(slot: Slot): void {
    if (this.#stopped || slot.running || slot.queued || slot.awaiting || slot.retry || !slot.latest) return;
    slot.queued = true;
    this.#ready.push(slot);
    this.#pump();
  }

  #pump(): void {
    while (this.#active.size < this.#options.concurrency && this.#ready.length > 0) {
      const slot = this.#ready.shift() as Slot;
      slot.queued = false;
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
    let outcome: CycleOutcome;
    try {
      outcome = await this.#options.process(object);
      slot.failures = 0;
    } catch (error) {
      const delay = ERROR_DELAYS_S[Math.min(slot.failures, ERROR_DELAYS_S.length - 1)] as number;
      slot.failures++;
      this.#options.logger
        .child(describe(object))
        .error(`processing failed, retrying in ${delay}s: ${error instanceof Error ? error.message : error}`);
      outcome = { retryAfterMs: delay * 1000 };
    } finally {
      slot.running = false;
    }
    if (this.#stopped) return;
    // The watch may have shown our write already, while the request was still returning.
    const newest = slot.latest as KubernetesObject | undefined;
    if (outcome.written && newest?.metadata.resourceVersion !== outcome.written) {
      const timer = setTimeout(() => {
        slot.awaiting = undefined;
        this.#schedule(slot);
      }, this.#options.consistencyTimeoutMs);
      slot.awaiting = { resourceVersion: outcome.written, timer };
    }
    if (outcome.retryAfterMs !== undefined) {
      slot.latest ??= object;
      slot.retry = setTimeout(() => {
        slot.retry = undefined;
        this.#schedule(slot);
      }, outcome.retryAfterMs);
    }
    this.#forgetIfIdle(slot);
    this.#schedule(slot);
  }

  #cancelTimers(slot: Slot): void {
    if (slot.awaiting) clearTimeout(slot.awaiting.timer);
    if (slot.retry) clearTimeout(slot.retry);
    slot.awaiting = undefined;
    slot.retry = undefined;
  }

  #forgetIfIdle(slot: Slot): void {
    if (!slot.running && !slot.queued && !slot.latest && !slot.awaiting && !slot.retry)
      this.#slots.delete(slot.key);
  }
}

export function describe(object: KubernetesObject): string {
  const { namespace, name } = object.metadata;
  return namespace ? `${namespace}/${name}` : name;
}
