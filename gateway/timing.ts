/** Node runs a timer set for longer than this (some 24.8 days) after 1 ms: what waits longer looks again without end. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** Waits `ms`, or less if the signal aborts first; never rejects. Longer than a timer holds: in steps. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    let timer: NodeJS.Timeout | undefined;
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const wait = (left: number) => {
      timer = setTimeout(
        () => (left > MAX_TIMER_MS ? wait(left - MAX_TIMER_MS) : done()),
        Math.min(left, MAX_TIMER_MS),
      );
    };
    wait(ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}

/** Spreads retries of many clients apart: the delay times a random factor in [0.5, 1.5). */
export function jitter(ms: number): number {
  return ms * (0.5 + Math.random());
}

/**
 * A server's Retry-After, spread over [1, 1.5) times it: never sooner than it asks, and the requests
 * it refused together do not all come back together, to be refused together again.
 */
export function spreadRetryAfter(ms: number): number {
  return ms * (1 + Math.random() / 2);
}

/**
 * Waits `ms`, or less if `wake` resolves first (given a signal that aborts when the wait is over, to
 * stop waiting for it) or the signal aborts; never rejects. Says whether `wake` cut it short.
 */
export async function sleepUnlessWoken(
  ms: number,
  wake: ((over: AbortSignal) => Promise<void>) | undefined,
  signal?: AbortSignal,
): Promise<boolean> {
  if (!wake) {
    await sleep(ms, signal);
    return false;
  }
  const over = new AbortController();
  let woken = false;
  void wake(over.signal).then(() => {
    if (over.signal.aborted) return;
    woken = true;
    over.abort();
  });
  await sleep(ms, signal ? AbortSignal.any([signal, over.signal]) : over.signal);
  over.abort();
  return woken;
}

/**
 * Tasks run one at a time, each once the one before has settled, in the order given. A task's failure
 * is its caller's (`run` rejects with it), and `onError` hears of it too, when given.
 */
export class Serial {
  #last: Promise<unknown> = Promise.resolve();
  readonly #onError: ((error: unknown) => void) | undefined;

  constructor(onError?: (error: unknown) => void) {
    this.#onError = onError;
  }

  run<T>(task: () => T | Promise<T>): Promise<T> {
    const result = this.#last.then(task);
    this.#last = result.catch((error) => this.#onError?.(error));
    return result;
  }

  /** Resolves once every task given so far has settled. */
  async idle(): Promise<void> {
    await this.#last;
  }
}
