/**
 * The longest delay a handler's options or a reply may ask for, in seconds: a year. The gateway waits
 * for delays with timers and stores when they end as dates; a delay of 1e300 seconds, or Infinity (what
 * JSON.parse makes of 1e999), has no date to end at. The SDK refuses longer delays where they are
 * written, so a handler learns of it from its own stack rather than from the gateway's refusal.
 */
export const MAX_DELAY_SECONDS = 365 * 24 * 3600;

/** Whether `value` is a delay of that range: from 0 (above 0 if `positive`) to a year. */
export function isDelaySeconds(value: unknown, { positive = false } = {}): value is number {
  return typeof value === 'number' && (positive ? value > 0 : value >= 0) && value <= MAX_DELAY_SECONDS;
}

/** How errors name that range. */
export function delayRange({ positive = false } = {}): string {
  return positive
    ? `a number of seconds above 0, at most ${MAX_DELAY_SECONDS} (a year)`
    : `a number of seconds from 0 to ${MAX_DELAY_SECONDS} (a year)`;
}

/**
 * The most a service's memo of one object may hold, in bytes of JSON: the gateway keeps memos in its
 * memory, one per object and service, and fails the call whose answer would make one larger.
 */
export const MAX_MEMO_BYTES = 64 * 1024;
