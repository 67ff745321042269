/**
 * Whether the Kubernetes API answers, as the gateway's requests find it. When the apiserver goes away
 * every watch and every write retries on its own; this says so once, when requests have found no one
 * to answer for a while, and once when a request is answered again, instead of a line per watch per
 * retry. A connection that broke under a few requests, theirs answered when tried again, is no outage
 * and says nothing; a connection found silent is said by the client's liveness check (liveness.ts).
 */
import type { Logger } from '../logging.ts';
import { type Backoff, backoffDelay, sleep } from '../timing.ts';
import type { RequestObserver } from './client.ts';
import { ApiError, isTransient, isTransientStatus, SilentConnection } from './errors.ts';

/** How long requests find no one to answer, and none is answered, before the API is said unreachable. */
export const UNANSWERED_MS = 1000;

export function reachabilityLog(logger: Logger, now: () => number = Date.now): RequestObserver {
  /** When a request first found no one to answer, since the last answer. */
  let unansweredSince: number | undefined;
  let said = false;
  return (_method, _path, status, error) => {
    if (status !== undefined) {
      if (said && unansweredSince !== undefined) {
        const seconds = (now() - unansweredSince) / 1000;
        logger.info('Kubernetes API reachable again', { unreachableSeconds: Number(seconds.toFixed(1)) });
      }
      unansweredSince = undefined;
      said = false;
      return;
    }
    if (!foundNoAnswer(error) || error instanceof SilentConnection) return;
    unansweredSince ??= now();
    if (said || now() - unansweredSince < UNANSWERED_MS) return;
    said = true;
    logger.warning('Kubernetes API unreachable: watches and writes retry until it answers', {
      err: describe(error),
    });
  };
}

/**
 * Whether a request found no one to answer: it got no answer (an ApiError is one), and it was not the
 * gateway that gave up on it (it stops, or drops a silent watch), which says nothing of the API.
 */
export function foundNoAnswer(error: unknown): error is Error {
  return error instanceof Error && !(error instanceof ApiError) && error.name !== 'AbortError';
}

/**
 * A request the API did not answer however often it was tried, or answered only as an apiserver still
 * starting (see waitsForComeback). The log of reachability has said so, once for all of them: who
 * meets it need not say it again for each object, and waits for the API to come back.
 */
export class ApiUnreachable extends Error {
  override name = 'ApiUnreachable';

  constructor(cause: Error) {
    super(`the Kubernetes API is unreachable: ${cause.message}`, { cause });
  }
}

/** How often, while anything waits for the API to answer again, it is asked whether it is back. */
export const COMEBACK_PROBE_MS = 1000;

/**
 * Whether a failed try goes again as soon as the API is back (ApiComeback), as well as at the end of its
 * backoff: when it found no one to answer, or, right after that, met a starting apiserver's 503, whose
 * Retry-After of 5 s its readiness ends sooner. A 429's Retry-After is always waited for in full.
 */
export function waitsForComeback(error: unknown, foundNoAnswerBefore: boolean): boolean {
  return foundNoAnswer(error) || (foundNoAnswerBefore && error instanceof ApiError && error.status === 503);
}

/**
 * The API's return after it answered nothing. Watches, writes and cycles that found no one to answer,
 * or then the answers of an apiserver still starting (503 until it serves every path, with a
 * Retry-After of 5 s; 429 while its storage initialises), wait for it as well as for their own backoff,
 * which has grown through the outage (up to 30 s for a watch). While any of them waits, one probe a
 * second (jittered) asks the API's readiness (/readyz), and the first answer that is not transient
 * releases them all: within about a second of its return, whatever the outage's length, for the cost
 * of one request a second to an API that is down. Only the probe's answer counts: /readyz answers 500
 * until the apiserver serves every path, while other paths answer before it does (or never, an
 * aggregated API that is down); and a wait is released once a probe, never in a loop.
 */
export class ApiComeback {
  readonly #probe: () => Promise<number | undefined>;
  /** One delay, jittered, however many probes failed: a long outage's end is seen as soon as a short one's. */
  readonly #probeBackoff: Backoff;
  /** What each wait resolves when the API is back. */
  readonly #waits = new Set<() => void>();
  /** Aborted when nothing waits any more: ends the probes. */
  #probing: AbortController | undefined;

  /** `probe` asks the API's readiness once and gives the status, or undefined when nothing answered. */
  constructor(probe: () => Promise<number | undefined>, probeMs = COMEBACK_PROBE_MS) {
    this.#probe = probe;
    this.#probeBackoff = { delays: [probeMs], jitter: true };
  }

  /** Resolves once a probe's answer is not transient, or when `signal` aborts. */
  async wait(signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return;
    const { promise, resolve: settle } = Promise.withResolvers<void>();
    const resolve = () => settle();
    this.#waits.add(resolve);
    signal?.addEventListener('abort', resolve, { once: true });
    if (!this.#probing) {
      this.#probing = new AbortController();
      void this.#probeWhileWaited(this.#probing.signal);
    }
    try {
      await promise;
    } finally {
      signal?.removeEventListener('abort', resolve);
      this.#waits.delete(resolve);
      if (this.#waits.size === 0) {
        this.#probing?.abort();
        this.#probing = undefined;
      }
    }
  }

  async #probeWhileWaited(done: AbortSignal): Promise<void> {
    while (!done.aborted) {
      await sleep(backoffDelay(this.#probeBackoff, 0), done);
      if (done.aborted) return;
      const status = await this.#probe().catch(() => undefined);
      if (status !== undefined && !isTransientStatus(status)) for (const resolve of this.#waits) resolve();
    }
  }
}

/**
 * Failed answers in a row before a transient one (429, 5xx) is worth a warning: an apiserver that has
 * just started answers 503 for a moment (about 4 s of backoff before the fifth).
 */
const TRANSIENT_FAILURES_WORTH_A_WARNING = 5;

/**
 * How loud one failure of a watch is. An API that does not answer at all is said once for all the
 * watches (reachability.ts), a transient answer once it lasts; an answer that refuses this watch
 * (403, 404) each time.
 */
export function watchFailureLevel(error: unknown, failedAnswers: number): 'warning' | 'debug' {
  if (!(error instanceof ApiError)) return 'debug';
  if (!isTransient(error)) return 'warning';
  return failedAnswers === TRANSIENT_FAILURES_WORTH_A_WARNING ? 'warning' : 'debug';
}

function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  return error.cause instanceof Error ? `${error.message} (${error.cause.message})` : error.message;
}
