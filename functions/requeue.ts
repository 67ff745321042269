import { delayRange, isDelaySeconds } from '../protocol/index.ts';

/** What a reconcile handler returns to be called again after a while, even if nothing changes. */
export class Requeue {
  readonly seconds: number;
  readonly result: unknown;

  constructor(seconds: number, result?: unknown) {
    if (!isDelaySeconds(seconds, { positive: true })) {
      throw new RangeError(`requeue() needs ${delayRange({ positive: true })}, got ${String(seconds)}`);
    }
    this.seconds = seconds;
    this.result = result;
  }
}

/**
 * Reconcile handlers: `return requeue(30)` to be called again in 30 s, even if the object does not change;
 * `result`, when given, is stored as a returned value would be.
 */
export function requeue(seconds: number, result?: unknown): Requeue {
  return new Requeue(seconds, result);
}
