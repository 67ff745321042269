/**
 * An operator module with one daemon, for the daemon tests that serve it apart from the gateway: on
 * workerd (test/e2e/workers-daemons.test.ts) and as a `causeway serve` process killed mid-round
 * (test/e2e/daemons.test.ts). Each round counts itself in the memo, calls the object's
 * `spec.beacon` (test/support/beacon.ts) if it has one, so that a test knows the round's call is
 * open, waits for `stopped`, and patches its count and runtime into `status.beats` as it ends (what a
 * round returns is written when its call ends). Its log lines say how each round began and ended.
 */
import { operator } from 'causeway/functions';

const op = operator({ name: 'daemons' });

op.on.daemon('kopfexamples', async function beat_fn({ name, spec, memo, stopped, patch, logger }) {
  const round = ((memo.rounds as number | undefined) ?? 0) + 1;
  memo.rounds = round;
  logger.info(`round ${round} started on ${runtime()}`);
  if (typeof spec.beacon === 'string') {
    const query = new URLSearchParams({ name, round: String(round), runtime: runtime() });
    try {
      await (await fetch(`${spec.beacon}?${query}`)).text();
    } catch (error) {
      logger.warning(`the beacon did not answer: ${error}`);
    }
  }
  const signal = stopped;
  if (!signal.aborted) {
    await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
  }
  patch.status = { beats: { rounds: round, runtime: runtime() } };
  logger.info(`round ${round} stopped: ${signal.reason}`);
});

/** Workers say who they are in navigator.userAgent (Node too). */
function runtime(): string {
  return (globalThis as { navigator?: { userAgent?: string } }).navigator?.userAgent ?? 'unknown';
}

export default op;
