/**
 * The event loop's delay, and the part of it that is the gateway's own. A timer set every
 * `intervalMs` reads, each time it runs, the wall clock and the main thread's CPU time
 * (`process.threadCpuUsage`). Between two runs, the timer was late by the wall time beyond its
 * interval. That lateness is time the main thread spent either running (its own work: JavaScript,
 * garbage collection on the main thread) or not running while it had work: waiting for a CPU (other
 * processes, CFS throttling under a CPU limit) or blocked in the kernel. The CPU time it used in the
 * interval bounds the first: the own delay is the lateness, at most that CPU time. It is an upper
 * bound: CPU time spent before the timer was due counts too (at most one interval's).
 */
import type { Part } from '../manager/manager.ts';

/** Every 20 ms: a delay of 50 ms is seen in two or three runs, and an idle gateway is woken half as often as at 10 ms. */
export const SAMPLE_INTERVAL_MS = 20;

/** The main thread's CPU time so far, in ms; absent before Node 23.9, which has no `process.threadCpuUsage`. */
export type ThreadCpuClock = () => number;

export function threadCpuClock(): ThreadCpuClock | null {
  if (typeof process.threadCpuUsage !== 'function') return null;
  return () => {
    const { user, system } = process.threadCpuUsage();
    return (user + system) / 1000;
  };
}

/**
 * One interval between two runs of the timer: `elapsedMs` of wall time for a timer set for
 * `intervalMs`, in which the main thread ran `cpuMs` (the timer's own runs left out). The delay is how
 * late the timer ran; the own delay, the part of it the thread can have spent running.
 */
export function intervalDelays(
  elapsedMs: number,
  cpuMs: number,
  intervalMs: number,
): { delayMs: number; ownMs: number } {
  const delayMs = Math.max(0, elapsedMs - intervalMs);
  return { delayMs, ownMs: Math.min(delayMs, Math.max(0, cpuMs)) };
}

/**
 * A delay as the runs of the timer it stands for: this one, and those a pause kept from running, each
 * due an interval later and so an interval less late (down to one interval), so that a pause weighs
 * in a percentile as long as it lasted, not as one run among hundreds.
 */
export function delaysStoodFor(delayMs: number, intervalMs: number): number[] {
  const delays = [delayMs];
  for (let missed = delayMs - intervalMs; missed >= intervalMs; missed -= intervalMs) delays.push(missed);
  return delays;
}

/** One run of the sampler's timer: how late it ran, and the part of that the thread spent running when known (ms). */
export interface Run {
  delayMs: number;
  ownMs?: number;
}

/** The timer, as a component of the gateway: it samples from its start to its stop, without keeping the process alive. */
export class EventLoopSampler implements Part {
  readonly name = 'event-loop sampler';
  readonly placement = 'every replica';
  readonly #record: (run: Run) => void;
  readonly #cpu: ThreadCpuClock | null;
  readonly #intervalMs: number;
  #timer: NodeJS.Timeout | undefined;

  constructor(record: (run: Run) => void, cpu: ThreadCpuClock | null, intervalMs = SAMPLE_INTERVAL_MS) {
    this.#record = record;
    this.#cpu = cpu;
    this.#intervalMs = intervalMs;
  }

  start(): void {
    if (this.#timer) return;
    const cpu = this.#cpu;
    let ranAt = performance.now();
    let cpuAfter = cpu?.() ?? 0;
    this.#timer = setInterval(() => {
      const now = performance.now();
      if (cpu) {
        const { delayMs, ownMs } = intervalDelays(now - ranAt, cpu() - cpuAfter, this.#intervalMs);
        this.#record({ delayMs, ownMs });
        // From here: this run's own CPU time is not the next interval's.
        cpuAfter = cpu();
      } else {
        this.#record({ delayMs: intervalDelays(now - ranAt, 0, this.#intervalMs).delayMs });
      }
      ranAt = now;
    }, this.#intervalMs);
    this.#timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }
}
