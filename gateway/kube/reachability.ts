/**
 * Whether the Kubernetes API answers, as the gateway's requests find it. When the apiserver goes away
 * every watch and every write retries on its own; this says so once, when requests have found no one
 * to answer for a while, and once when a request is answered again, instead of a line per watch per
 * retry. A connection that broke under a few requests, theirs answered when tried again, is no outage
 * and says nothing; a connection found silent is said by the client's liveness check (liveness.ts).
 */
import type { Logger } from '../logging.ts';
import type { RequestObserver } from './client.ts';
import { ApiError, isTransient, SilentConnection } from './errors.ts';

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
 * A request the API did not answer, however often it was tried. The log of reachability has said so,
 * once for all of them: who meets it need not say it again for each object.
 */
export class ApiUnreachable extends Error {
  override name = 'ApiUnreachable';

  constructor(cause: Error) {
    super(`the Kubernetes API did not answer: ${cause.message}`, { cause });
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
