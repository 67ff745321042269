/**
 * The daemons running in this process, so that a stop call can reach them: each has a `stopped`
 * signal, aborted with the reason the gateway gives, when its round ends (a little before the call's
 * deadline, so the handler can still answer), or when its call is cut off.
 */
import type { DaemonStopReason } from '../protocol/index.ts';

/** Ends a round this long before the call's deadline (or a tenth of the round, if that is shorter). */
const ROUND_MARGIN_MS = 2000;

export class RunningDaemons {
  readonly #running = new Map<string, AbortController>();

  /** A daemon's `stopped` signal, for its call; `done` must be called when the handler returns. */
  start(key: string, deadline: string, cut: AbortSignal | undefined): { stopped: AbortSignal; done(): void } {
    const controller = new AbortController();
    this.#running.get(key)?.abort('cancelled'); // an older call of the same daemon is over
    this.#running.set(key, controller);
    const roundMs = Date.parse(deadline) - Date.now();
    const round = setTimeout(
      () => controller.abort('round-ended' satisfies DaemonStopReason),
      Math.max(0, roundMs - Math.min(ROUND_MARGIN_MS, roundMs / 10)),
    );
    const onCut = () => controller.abort('cancelled' satisfies DaemonStopReason);
    cut?.addEventListener('abort', onCut, { once: true });
    return {
      stopped: controller.signal,
      done: () => {
        clearTimeout(round);
        cut?.removeEventListener('abort', onCut);
        if (this.#running.get(key) === controller) this.#running.delete(key);
      },
    };
  }

  /** Tells the daemon of `key` to stop, if it runs here; whether it did. */
  stop(key: string, reason: DaemonStopReason): boolean {
    const controller = this.#running.get(key);
    if (!controller) return false;
    controller.abort(reason);
    return true;
  }
}
