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

/**
 * Delays between attempts that grow with the failures in a row: listed (the last repeats), or doubling
 * from a first one; `max` at most; spread over [0.5, 1.5) times with `jitter`, so that clients that
 * failed together do not all retry together. In the unit given.
 */
export type Backoff = (
  | { /** After 0, 1, 2… failures in a row; the last repeats. */ delays: readonly number[]; max?: number }
  | { /** After no failure yet, then doubled. */ first: number; max: number }
) & { jitter?: boolean };

/**
 * The delay before the attempt after `failures` failures in a row. The count is the caller's, who knows
 * what starts it over (an answer, the API back) and where it is kept (a slot, an object's status); the
 * wait is `sleep`'s or `sleepUnlessWoken`'s, with the caller's signal.
 */
export function backoffDelay(backoff: Backoff, failures: number): number {
  const grown =
    'delays' in backoff
      ? (backoff.delays[Math.min(failures, backoff.delays.length - 1)] as number)
      : backoff.first * 2 ** failures;
  const delay = Math.min(grown, backoff.max ?? grown);
  return backoff.jitter ? delay * (0.5 + Math.random()) : delay;
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
