/**
 * Kopf's example 15-timers: two timers on every KopfExample, each called only once the object has
 * been left alone for `idle` seconds, then every `interval` seconds until the object changes again.
 * The gateway keeps the schedule; each call is a short call like any other handler's, and what the
 * handler logs reaches the gateway's log as the call ends.
 */
import { operator } from 'causeway/functions';

const op = operator({ name: 'timers', scope: { resources: ['kopfexamples.kopf.dev'] } });

// A plain function: it answers before its call returns. (Kopf runs such a timer in a thread; here
// there is no thread, so it must not block: a slow one would hold up the whole function service.)
op.on.timer('kopfexamples', { idle: 2, interval: 1 }, function every_few_seconds_sync({ spec, logger }) {
  logger.info(`ping from a sync timer: field=${JSON.stringify(spec.field)}`);
});

// An async function, and one with a result: the gateway writes it to status.every_few_seconds_async
// only where it differs from what the object holds, so it is written once per value of spec.field,
// however often the timer runs.
op.on.timer(
  'kopfexamples',
  { idle: 4, interval: 2 },
  async function every_few_seconds_async({ spec, logger }) {
    logger.info(`ping from an async timer: field=${JSON.stringify(spec.field)}`);
    return { field: spec.field };
  },
);

export default op;
