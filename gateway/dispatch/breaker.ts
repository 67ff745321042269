/**
 * A circuit breaker per function service. After `threshold` calls in a row found it unreachable
 * (connection refused or reset, no answer in time, 502/503/504), the service is taken as down: calls
 * to it are not made, and the objects that needed one wait for its recovery without a retry loop or a
 * write each. Meanwhile its health check is asked on a backoff, every LONGEST_PROBE_DELAY_S at the
 * most; the first answer closes the circuit and wakes every waiting object at once.
 */
import type { Logger } from '../logging.ts';
import { backoffDelay } from '../timing.ts';

export interface BreakerOptions {
  /** Calls in a row that found the service unreachable before the circuit opens. */
  threshold: number;
  /** Seconds between health checks while open: one per failed check, the last repeated; LONGEST_PROBE_DELAY_S at most. */
  probeDelaysS: readonly number[];
  /** Resolves when the service answers its health check. */
  probe: () => Promise<void>;
  logger: Logger;
  /** Told when the circuit opens or closes. */
  onChange?: () => void;
}

/**
 * The longest wait between two health checks: a service back is found this soon at the latest, however
 * long it was down (an unsigned GET of /healthz costs the service next to nothing).
 */
export const LONGEST_PROBE_DELAY_S = 5;

interface Outage {
  since: number;
  reason: string;
  recovered: PromiseWithResolvers<void>;
  timer?: NodeJS.Timeout;
  probes: number;
}

export class CircuitBreaker {
  readonly #options: BreakerOptions;
  #failures = 0;
  #open: Outage | undefined;
  #closed = false;

  constructor(options: BreakerOptions) {
    this.#options = options;
  }

  /** While open, why: what the last calls found. */
  get down(): string | undefined {
    return this.#open?.reason;
  }

  /** Resolves once the service is back (at once while the circuit is closed). */
  recovered(): Promise<void> {
    return this.#open?.recovered.promise ?? Promise.resolve();
  }

  succeeded(): void {
    this.#failures = 0;
  }

  /** A call found the service unreachable; `reason` says how, for the log. */
  unreachable(reason: string): void {
    this.#failures++;
    if (this.#open || this.#failures < this.#options.threshold || this.#closed) return;
    const { logger } = this.#options;
    this.#open = { since: Date.now(), reason, recovered: Promise.withResolvers(), probes: 0 };
    logger.warning(
      'function service down: its calls wait, and nothing is written for them, until its health check answers',
      { failures: this.#failures, err: reason },
    );
    this.#scheduleProbe();
    this.#options.onChange?.();
  }

  /** Stops probing; whoever waits for a recovery is let go, to find the gateway stopping. */
  close(): void {
    this.#closed = true;
    if (!this.#open) return;
    clearTimeout(this.#open.timer);
    this.#open.recovered.resolve();
    this.#open = undefined;
  }

  #scheduleProbe(): void {
    const open = this.#open;
    if (!open) return;
    const backoff = { delays: this.#options.probeDelaysS, max: LONGEST_PROBE_DELAY_S };
    const delayS = backoffDelay(backoff, open.probes);
    open.timer = setTimeout(() => void this.#probe(open), delayS * 1000);
    open.timer.unref();
  }

  async #probe(open: Outage): Promise<void> {
    open.probes++;
    try {
      await this.#options.probe();
    } catch {
      if (this.#open === open) this.#scheduleProbe();
      return;
    }
    if (this.#open !== open) return;
    this.#open = undefined;
    this.#failures = 0;
    const seconds = Math.round((Date.now() - open.since) / 1000);
    this.#options.logger.info('function service back: its calls resume', { downSeconds: seconds });
    open.recovered.resolve();
    this.#options.onChange?.();
  }
}
