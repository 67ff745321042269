/**
 * Kopf's example 14-daemons: two daemons accompany every KopfExample, each one long call per object
 * that the gateway makes in rounds (`calls.daemonRoundMs`, 60 s by default). Both fail their first
 * three attempts; then `background_sync` pings for a few seconds and finishes by itself, while
 * `background_async`, for annotated objects only, pings until it is told to stop.
 *
 * A daemon gets `stopped`, an AbortSignal, and must return soon after it aborts: its `reason` says
 * why. `round-ended` means the gateway calls it again at once; what a round must hand to the next
 * goes in `memo`, since each round is a call of its own (and `retry` counts the failures since the
 * last round that ended well, so it starts again at 0 in every round).
 */
import { operator, TemporaryError } from 'causeway/functions';

const op = operator({ name: 'daemons', scope: { resources: ['kopfexamples.kopf.dev'] } });

/** Seconds between pings. */
const PING_S = 1;
/** How long background_sync accompanies its object once it got going (Kopf's: 30 s). */
const ACCOMPANY_S = 5;

/** Resolves after `seconds`, or as soon as `signal` aborts: a daemon's sleep, cut short by a stop. */
function pause(seconds: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, seconds * 1000);
    signal.addEventListener('abort', done, { once: true });
  });
}

// Fails three times, telling so in status.message; then pings for ACCOMPANY_S seconds, across rounds
// (when it began is kept in the memo), and returns: it is not called again until the object changes.
// A `backoff` of 3 s would space the retries of an unexpected error; a TemporaryError says its own delay.
op.on.daemon(
  'kopfexamples',
  { backoff: 3 },
  async function background_sync({ spec, logger, retry, patch, memo, stopped }) {
    if (typeof memo.accompanyingSince !== 'number') {
      if (retry < 3) {
        patch.status = { message: `Failed ${retry + 1} times.` };
        throw new TemporaryError('Simulated failure.', { delay: 1 });
      }
      memo.accompanyingSince = Date.now();
    }
    const until = (memo.accompanyingSince as number) + ACCOMPANY_S * 1000;
    while (!stopped.aborted && Date.now() < until) {
      logger.info(`=> ping from a sync daemon: field=${JSON.stringify(spec.field)}`);
      await pause(Math.min(PING_S, (until - Date.now()) / 1000), stopped);
    }
    if (stopped.reason === 'round-ended') return; // called again at once, with the memo as left here
    if (stopped.aborted) logger.info(`stopped: ${stopped.reason}`);
    delete memo.accompanyingSince; // started again (the object changed): fails three times again
    patch.status = { message: 'Accompanying is finished.' };
  },
);

// For objects annotated someannotation=somevalue: fails three times, then pings until stopped. When
// it is stopped for good (the object deleted or no longer annotated), it has half a second to
// return before the gateway cuts its call off.
op.on.daemon(
  'kopfexamples',
  { backoff: 3, cancellationTimeout: 0.5, annotations: { someannotation: 'somevalue' } },
  async function background_async({ spec, logger, retry, memo, stopped }) {
    if (memo.pinging !== true) {
      if (retry < 3) throw new TemporaryError('Simulated failure.', { delay: 1 });
      memo.pinging = true;
    }
    while (!stopped.aborted) {
      logger.info(`=> ping from an async daemon: field=${JSON.stringify(spec.field)}`);
      await pause(PING_S, stopped);
    }
    if (stopped.reason === 'round-ended') return;
    delete memo.pinging; // started again (annotated again): fails three times again
    logger.info(`stopped: ${stopped.reason}`);
  },
);

export default op;
