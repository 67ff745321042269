/**
 * Bulkheads between function services: each service has budgets of its own (bytes of its replies
 * being read, its calls in flight, its daemons' connections, the bytes of its indexes), so that one
 * service that asks for much waits for itself, and the others go on.
 *
 * A Budget is a semaphore of units (bytes, calls) with fair waiting: those who wait are served in the
 * order they came, a large ask before smaller ones after it (none starves), and one that gives up (its
 * signal aborts) leaves the line without taking anything.
 */

/** Which of a service's budgets: the label of its metrics. */
export type BudgetName = 'reply_bytes' | 'calls' | 'daemons' | 'index_bytes';

/** The budget ran dry while everything in use was held by those waiting for more: the youngest gave way. */
export class BudgetStalled extends Error {
  override name = 'BudgetStalled';
}

interface Waiter {
  amount: number;
  /** What the asker already holds of this budget (a reply read so far): what gives way in a stall. */
  holding: number;
  resolve(): void;
  reject(error: unknown): void;
  leave(): void;
}

export class Budget {
  #limit: number;
  #used = 0;
  #waits = 0;
  readonly #line: Waiter[] = [];
  readonly #onWait: (() => void) | undefined;

  constructor(limit: number, onWait?: () => void) {
    this.#limit = checkedLimit(limit);
    this.#onWait = onWait;
  }

  get limit(): number {
    return this.#limit;
  }

  /** Another limit from now on (the service given anew): those waiting are served as it allows. */
  set limit(limit: number) {
    this.#limit = checkedLimit(limit);
    this.#serve();
  }

  get used(): number {
    return this.#used;
  }

  /** Asks that had to wait (or, through take, were refused), since the budget was made. */
  get waits(): number {
    return this.#waits;
  }

  /**
   * Takes `amount`, at once if it fits and no one waits before, or in its turn. Rejects with the
   * signal's reason if it aborts first, having taken nothing. `holding`: what the asker holds already,
   * so that a stall (everything in use held by those who wait) is broken by the youngest of them
   * giving way, with BudgetStalled, rather than by their deadlines.
   */
  acquire(amount: number, signal?: AbortSignal, holding = 0): Promise<void> {
    if (amount > this.#limit) {
      return Promise.reject(new RangeError(`${amount} is more than the whole budget, ${this.#limit}`));
    }
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.#line.length === 0 && this.#used + amount <= this.#limit) {
      this.#used += amount;
      return Promise.resolve();
    }
    this.#waits++;
    this.#onWait?.();
    return new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        const at = this.#line.indexOf(waiter);
        if (at >= 0) this.#line.splice(at, 1);
        reject(signal?.reason);
        this.#serve();
      };
      const waiter: Waiter = {
        amount,
        holding,
        resolve,
        reject,
        leave: () => signal?.removeEventListener('abort', onAbort),
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#line.push(waiter);
      this.#breakStall();
    });
  }

  /** Takes `amount` if it fits now and no one waits; says whether it did (counted as a wait if not). */
  take(amount: number): boolean {
    if (this.#line.length === 0 && this.#used + amount <= this.#limit) {
      this.#used += amount;
      return true;
    }
    this.#waits++;
    this.#onWait?.();
    return false;
  }

  /** Gives back `amount` of what was taken; those waiting are served in turn. */
  release(amount: number): void {
    if (amount <= 0) return;
    this.#used = Math.max(0, this.#used - amount);
    this.#serve();
  }

  #serve(): void {
    for (let first = this.#line[0]; first; first = this.#line[0]) {
      if (this.#used + first.amount > this.#limit) break;
      this.#line.shift();
      this.#used += first.amount;
      first.leave();
      first.resolve();
    }
    this.#breakStall();
  }

  /**
   * Everything in use is held by askers who wait for more: none can finish, so none would give back.
   * The youngest that holds something gives way (it releases what it holds, and may ask again later).
   */
  #breakStall(): void {
    const held = this.#line.reduce((sum, waiter) => sum + waiter.holding, 0);
    if (this.#used === 0 || held < this.#used) return;
    const youngest = this.#line.findLastIndex((waiter) => waiter.holding > 0);
    const [victim] = this.#line.splice(youngest, 1);
    if (!victim) return;
    victim.leave();
    victim.reject(
      new BudgetStalled(
        `the budget of ${this.#limit} was all held by asks waiting for more; the youngest gave way`,
      ),
    );
  }
}

function checkedLimit(limit: number): number {
  if (!Number.isSafeInteger(limit) || limit < 1) {
    throw new RangeError(`a budget's limit is a whole number above 0, not ${limit}`);
  }
  return limit;
}

/** The budgets of one function service. */
export interface ServiceBudgets {
  /** Bytes of its replies read and not parsed yet (settings.calls.replyBytesPerService). */
  replyBytes: Budget;
  /** Its requests in flight over HTTP, a batch one (settings.calls.concurrencyPerService). */
  calls: Budget;
  /** Its daemons' calls open at once (settings.calls.daemonsPerService). */
  daemons: Budget;
  /** Bytes of the values its indexes hold, over every index (settings.calls.indexBytesPerService). */
  indexBytes: Budget;
}

export interface BudgetLimits {
  /** The longest reply: the budget of reply bytes must hold one. */
  maxReplyBytes: number;
  replyBytesPerService: number;
  concurrencyPerService: number;
  daemonsPerService: number;
  indexBytesPerService: number;
}

/** What a budget's metrics read. */
export interface BudgetReading {
  service: string;
  budget: BudgetName;
  used: number;
  limit: number;
}

const NAMES: ReadonlyArray<[keyof ServiceBudgets, BudgetName]> = [
  ['replyBytes', 'reply_bytes'],
  ['calls', 'calls'],
  ['daemons', 'daemons'],
  ['indexBytes', 'index_bytes'],
];

/**
 * Every service's budgets, by name: kept across its redeploys and dev sessions (a service is one
 * budget whichever instance answers), told to `waited` each time one of them makes an ask wait.
 */
export class Budgets {
  readonly #limits: BudgetLimits;
  readonly #waited: ((service: string, budget: BudgetName) => void) | undefined;
  readonly #byService = new Map<string, ServiceBudgets>();

  constructor(limits: BudgetLimits, waited?: (service: string, budget: BudgetName) => void) {
    if (!(limits.replyBytesPerService >= limits.maxReplyBytes)) {
      throw new RangeError(
        `calls.replyBytesPerService (${limits.replyBytesPerService}) must hold at least one reply of ` +
          `calls.maxReplyBytes (${limits.maxReplyBytes})`,
      );
    }
    this.#limits = limits;
    this.#waited = waited;
  }

  /** The budgets of `service`, made at its first use; `calls`: its own limit, when it was given one. */
  of(service: string, calls?: number): ServiceBudgets {
    let budgets = this.#byService.get(service);
    if (!budgets) {
      const made = (limit: number, name: BudgetName) =>
        new Budget(limit, () => this.#waited?.(service, name));
      budgets = {
        replyBytes: made(this.#limits.replyBytesPerService, 'reply_bytes'),
        calls: made(calls ?? this.#limits.concurrencyPerService, 'calls'),
        daemons: made(this.#limits.daemonsPerService, 'daemons'),
        indexBytes: made(this.#limits.indexBytesPerService, 'index_bytes'),
      };
      this.#byService.set(service, budgets);
    } else if (calls !== undefined) {
      budgets.calls.limit = calls;
    }
    return budgets;
  }

  /** Each budget of the services named, as the metrics read it. */
  *readings(services: Iterable<string>): Iterable<BudgetReading> {
    for (const service of services) {
      const budgets = this.#byService.get(service);
      if (!budgets) continue;
      for (const [key, budget] of NAMES) {
        yield { service, budget, used: budgets[key].used, limit: budgets[key].limit };
      }
    }
  }
}
