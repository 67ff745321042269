/**
 * Many deadlines on one JavaScript timer: a binary heap ordered by due time, and one `setTimeout` for
 * the earliest. Timers on thousands of objects cost one heap entry each, not a Node timer each.
 * Rescheduling or cancelling leaves the old entry in the heap, skipped when it comes up (and swept out
 * when stale entries outnumber live ones), so both are O(log n).
 */

/** Node's timers fire at once beyond this (2^31 - 1 ms); longer waits are taken in steps. */
const LONGEST_WAIT_MS = 2 ** 31 - 1;

interface Entry<T> {
  at: number;
  item: T;
  /** Which schedule of the item this is: only the item's latest is live. */
  token: number;
}

export class Scheduler<T> {
  readonly #heap: Entry<T>[] = [];
  /** Each scheduled item's live token. */
  readonly #live = new Map<T, number>();
  readonly #onDue: (items: T[]) => void;
  readonly #now: () => number;
  #tokens = 0;
  #timer: NodeJS.Timeout | undefined;
  #timerAt = Number.POSITIVE_INFINITY;
  #stopped = false;

  /** `onDue` gets the items whose time has come, earliest first, once each. */
  constructor(onDue: (items: T[]) => void, now: () => number = Date.now) {
    this.#onDue = onDue;
    this.#now = now;
  }

  /** Items scheduled and not due yet. */
  get size(): number {
    return this.#live.size;
  }

  has(item: T): boolean {
    return this.#live.has(item);
  }

  /** Calls `item` at `at` (epoch ms), instead of any time it was scheduled for before. */
  schedule(item: T, at: number): void {
    if (this.#stopped) return;
    const token = ++this.#tokens;
    this.#live.set(item, token);
    this.#push({ at, item, token });
    if (this.#heap.length > 64 && this.#heap.length > 2 * this.#live.size) this.#sweep();
    this.#arm();
  }

  cancel(item: T): void {
    this.#live.delete(item);
  }

  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#heap.length = 0;
    this.#live.clear();
  }

  #fire(): void {
    this.#timer = undefined;
    this.#timerAt = Number.POSITIVE_INFINITY;
    const now = this.#now();
    const due: T[] = [];
    while (this.#heap.length > 0 && (this.#heap[0] as Entry<T>).at <= now) {
      const { item, token } = this.#pop();
      if (this.#live.get(item) !== token) continue; // rescheduled or cancelled since
      this.#live.delete(item);
      due.push(item);
    }
    this.#arm();
    if (due.length > 0) this.#onDue(due);
  }

  /** One Node timer, for the earliest live entry (stale ones at the top are dropped first). */
  #arm(): void {
    while (this.#heap.length > 0) {
      const top = this.#heap[0] as Entry<T>;
      if (this.#live.get(top.item) === top.token) break;
      this.#pop();
    }
    const next = this.#heap[0];
    if (!next) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
      this.#timerAt = Number.POSITIVE_INFINITY;
      return;
    }
    if (this.#timer && this.#timerAt <= next.at) return;
    clearTimeout(this.#timer);
    this.#timerAt = next.at;
    const wait = Math.min(Math.max(0, next.at - this.#now()), LONGEST_WAIT_MS);
    this.#timer = setTimeout(() => this.#fire(), wait);
    this.#timer.unref?.();
  }

  /** Rebuilds the heap from the live entries only. */
  #sweep(): void {
    const live = this.#heap.filter((entry) => this.#live.get(entry.item) === entry.token);
    this.#heap.length = 0;
    for (const entry of live) this.#push(entry);
  }

  #push(entry: Entry<T>): void {
    const heap = this.#heap;
    heap.push(entry);
    let index = heap.length - 1;
    while (index > 0) {
      const parent = (index - 1) >> 1;
      if ((heap[parent] as Entry<T>).at <= entry.at) break;
      heap[index] = heap[parent] as Entry<T>;
      index = parent;
    }
    heap[index] = entry;
  }

  #pop(): Entry<T> {
    const heap = this.#heap;
    const top = heap[0] as Entry<T>;
    const last = heap.pop() as Entry<T>;
    if (heap.length === 0) return top;
    let index = 0;
    for (;;) {
      const left = 2 * index + 1;
      if (left >= heap.length) break;
      const right = left + 1;
      const child =
        right < heap.length && (heap[right] as Entry<T>).at < (heap[left] as Entry<T>).at ? right : left;
      if ((heap[child] as Entry<T>).at >= last.at) break;
      heap[index] = heap[child] as Entry<T>;
      index = child;
    }
    heap[index] = last;
    return top;
  }
}
