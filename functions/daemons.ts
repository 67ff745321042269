/**
 * The daemons running in this process, so that a stop call can reach them: each has a `stopped`
 * signal, aborted with the reason the gateway gives, when its round ends (a little before the call's
 * deadline, so the handler can still answer), or when its call is cut off.
 *
 * A stop call is another request than the daemon's. Workers refuse to abort a signal of one request
 * while handling another, so a stop only settles a promise made in the daemon's request, and the
 * daemon's own request aborts its signal.
 */
import type { DaemonStopReason } from '../protocol/index.ts';

/** Ends a round this long before the call's deadline (or a tenth of the round, if that is shorter). */
const ROUND_MARGIN_MS = 2000;

interface Running {
  signal: AbortSignal;
  /** Aborts the signal with the reason, from the daemon's own request. */
  tell(reason: DaemonStopReason): void;
}

export class RunningDaemons {
  readonly #running = new Map<string, Running>();

  /**
   * A daemon's `stopped` signal, for its call; `done` must be called when the handler returns. A call
   * that says the daemon is `stopped` already aborts it as soon as the handler has started, so that a
   * handler waiting for the abort event sees it too.
   */
  start(
    key: string,
    deadline: string,
    cut: AbortSignal | undefined,
    stopped?: DaemonStopReason,
  ): { stopped: AbortSignal; done(): void } {
    const controller = new AbortController();
    const told = Promise.withResolvers<DaemonStopReason>();
    void told.promise.then((reason) => controller.abort(reason));
    this.#running.get(key)?.tell('cancelled'); // an older call of the same daemon is over
    this.#running.set(key, { signal: controller.signal, tell: told.resolve });
    const roundMs = Date.parse(deadline) - Date.now();
    const round = setTimeout(
      () => controller.abort(stopped ?? ('round-ended' satisfies DaemonStopReason)),
      stopped ? 0 : Math.max(0, roundMs - Math.min(ROUND_MARGIN_MS, roundMs / 10)),
    );
    const onCut = () => controller.abort('cancelled' satisfies DaemonStopReason);
    cut?.addEventListener('abort', onCut, { once: true });
    return {
      stopped: controller.signal,
      done: () => {
        clearTimeout(round);
        cut?.removeEventListener('abort', onCut);
        if (this.#running.get(key)?.signal === controller.signal) this.#running.delete(key);
      },
    };
  }

  /**
   * Tells the daemon of `key` to stop, if it runs here; whether it was told. One whose round has just
   * ended is not: it returns for that, and the gateway makes a last call to tell it.
   */
  stop(key: string, reason: DaemonStopReason): boolean {
    const running = this.#running.get(key);
    if (!running || running.signal.aborted) return false;
    running.tell(reason);
    return true;
  }
}
