/**
 * Whether the Kubernetes API answers, as the gateway's requests find it. When the apiserver goes away
 * every watch and every write retries on its own; this says so once, when the first request finds no
 * one to answer, and once when a request is answered again, instead of a line per watch per retry.
 */
import type { Logger } from '../logging.ts';
import type { RequestObserver } from './client.ts';
import { ApiError, isTransient } from './errors.ts';

export function reachabilityLog(logger: Logger, now: () => number = Date.now): RequestObserver {
  let unreachableSince: number | undefined;
  return (_method, _path, status, error) => {
    if (status !== undefined) {
      if (unreachableSince === undefined) return;
      const seconds = (now() - unreachableSince) / 1000;
      unreachableSince = undefined;
      logger.info('Kubernetes API reachable again', { unreachableSeconds: Number(seconds.toFixed(1)) });
      return;
    }
    if (!foundNoAnswer(error)) return;
    if (unreachableSince !== undefined) return;
    unreachableSince = now();
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
