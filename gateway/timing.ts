/** Waits `ms`, or less if the signal aborts first; never rejects. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
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
