import { delayRange, isDelaySeconds } from '../protocol/index.ts';

const DEFAULT_DELAY_SECONDS = 60;

/** The handler failed for now: the gateway retries it after `delay` seconds. */
export class TemporaryError extends Error {
  override name = 'TemporaryError';
  readonly delay: number;

  constructor(message: string, options: { delay?: number; cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    const delay = options.delay ?? DEFAULT_DELAY_SECONDS;
    if (!isDelaySeconds(delay)) {
      throw new RangeError(`TemporaryError delay must be ${delayRange()}, got ${delay}`);
    }
    this.delay = delay;
  }
}

/** The handler cannot succeed for this change: the gateway does not retry it. */
export class PermanentError extends Error {
  override name = 'PermanentError';
}

/**
 * Admission handlers: the request under review is refused, with this message and HTTP code (as
 * Kopf's AdmissionError). kubectl shows the message; other errors refuse it with a generic one.
 */
export class AdmissionError extends PermanentError {
  override name = 'AdmissionError';
  readonly code: number;

  constructor(message: string, code = 500) {
    super(message);
    if (!(Number.isInteger(code) && code >= 400 && code <= 599)) {
      throw new RangeError(`AdmissionError code must be an HTTP error code (400 to 599), got ${code}`);
    }
    this.code = code;
  }
}
