/**
 * A resource's workers shared among the services bound to it: a cycle waiting on a service's answer
 * keeps its worker, so a slow service (hostile, or over its budget) could otherwise hold them all and
 * leave the other services' objects waiting. Each service may hold `ceil(concurrency / services bound)`
 * of them at once (all of them when it is alone on the resource); a cycle that would call a service
 * holding its share does not call it now: its handlers wait as for a service that is down (CallResults'
 * `down`), woken when the service's share has room, while the other services' handlers are called.
 */
import type { CallHandlers } from './calls.ts';
import { type DueCall, type Named, nameOf } from './model.ts';

export interface WorkerSharesOptions {
  /** The resource's workers (settings.processing.concurrency). */
  concurrency: number;
  /** How many services are bound to the resource now: read at each call, so the share follows rebinds. */
  services: () => number;
  /** A service's handlers waited for its share to have room. */
  onWait?: (service: string) => void;
}

export class WorkerShares {
  readonly #options: WorkerSharesOptions;
  /** Workers held now, by service. */
  readonly #held = new Map<string, number>();
  /** Wake-ups of the cycles that found a service's share full, by service. */
  readonly #waiting = new Map<string, Array<() => void>>();

  constructor(options: WorkerSharesOptions) {
    this.#options = options;
  }

  /** The most workers one service may hold at once. */
  get share(): number {
    return Math.ceil(this.#options.concurrency / Math.max(1, this.#options.services()));
  }

  /** Workers the service holds now. */
  held(service: string): number {
    return this.#held.get(service) ?? 0;
  }

  /**
   * Takes a worker for a call of the service; or, when it holds its share already, a promise that
   * resolves once it has room. Such a service holds a worker at least, so a release always comes.
   */
  take(service: string): Promise<void> | undefined {
    const held = this.held(service);
    if (held < this.share) {
      this.#held.set(service, held + 1);
      return undefined;
    }
    this.#options.onWait?.(service);
    return new Promise((resolve) => {
      const line = this.#waiting.get(service);
      if (line) line.push(resolve);
      else this.#waiting.set(service, [resolve]);
    });
  }

  /** Gives back a worker `take` gave, and wakes every cycle waiting for the service's share. */
  release(service: string): void {
    const held = this.held(service) - 1;
    if (held > 0) this.#held.set(service, held);
    else this.#held.delete(service);
    const waiting = this.#waiting.get(service);
    if (!waiting) return;
    this.#waiting.delete(service);
    for (const wake of waiting) wake();
  }
}

/**
 * Calls through the shares: each service of the due calls takes a worker for the call, given back when
 * the call ends whatever its end; the calls of a service holding its share are left out, and wait.
 */
export function sharedCalls<S extends Named>(call: CallHandlers<S>, shares: WorkerShares): CallHandlers<S> {
  return async (due, subject, log) => {
    if (due.length === 0) return call(due, subject, log);
    const taken: string[] = [];
    const waits: Promise<void>[] = [];
    const refused = new Set<string>();
    for (const service of new Set(due.map((one) => nameOf(one.service)))) {
      const room = shares.take(service);
      if (room) {
        waits.push(room);
        refused.add(service);
      } else taken.push(service);
    }
    const admitted: DueCall<S>[] =
      refused.size === 0 ? [...due] : due.filter((one) => !refused.has(nameOf(one.service)));
    try {
      const results =
        admitted.length > 0 ? await call(admitted, subject, log) : { outcomes: [], memoUpdates: [] };
      if (waits.length === 0) return results;
      if (results.down) waits.push(results.down);
      return { ...results, down: Promise.race(waits) };
    } finally {
      for (const service of taken) shares.release(service);
    }
  };
}
