const DEFAULT_DELAY_SECONDS = 60;

/** The handler failed for now: the gateway retries it after `delay` seconds. */
export class TemporaryError extends Error {
  override name = 'TemporaryError';
  readonly delay: number;

  constructor(message: string, options: { delay?: number; cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    const delay = options.delay ?? DEFAULT_DELAY_SECONDS;
    if (!Number.isFinite(delay) || delay < 0) {
      throw new RangeError(`TemporaryError delay must be a non-negative number of seconds, got ${delay}`);
    }
    this.delay = delay;
  }
}

/** The handler cannot succeed for this change: the gateway does not retry it. */
export class PermanentError extends Error {
  override name = 'PermanentError';
}
