export interface WaitOptions {
  timeoutMs: number;
  intervalMs?: number;
  /** Appended to the timeout error, e.g. the last response or a log tail. */
  detail?: () => Promise<string> | string;
}

/**
 * Polls `probe` until it returns a value other than undefined. A probe that throws ends the wait with
 * its error, so probes decide themselves which failures mean "not yet" and which mean "never".
 */
export async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  { timeoutMs, intervalMs = 100, detail }: WaitOptions,
): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (performance.now() >= deadline) {
      const extra = detail ? `\n${await detail()}` : '';
      throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}${extra}`);
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
