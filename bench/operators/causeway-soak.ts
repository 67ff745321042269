/**
 * The soak's operator (bench/soak.ts): create, update and delete handlers whose results land in the
 * status (the delete handler's finalizer holds each object until it ran), a timer (every
 * $BENCH_TIMER_INTERVAL seconds, its unchanging result written once) and a daemon per object, and a
 * validating and a mutating admission handler, which the apiserver calls on the soak's writes: the
 * mutating one labels every object it admits, so that the soak sees each was reviewed.
 */
import { operator } from 'causeway/functions';

const timerInterval = Number(process.env.BENCH_TIMER_INTERVAL ?? '3');

const op = operator({ name: 'bench' });

op.on.create('kopfexamples', async function create_fn({ spec }) {
  return { field: spec.field };
});

op.on.update('kopfexamples', async function update_fn({ spec }) {
  return { field: spec.field };
});

op.on.delete('kopfexamples', async function delete_fn() {});

op.on.timer('kopfexamples', { interval: timerInterval }, async function tick() {
  return { ticked: true };
});

// Runs until its object is deleted, then returns at once.
op.on.daemon('kopfexamples', { cancellationTimeout: 10 }, async function watch({ stopped }) {
  if (!stopped.aborted) await new Promise((settle) => stopped.addEventListener('abort', settle));
});

op.on.validate('kopfexamples', { operations: ['CREATE', 'UPDATE'] }, function allow() {});

op.on.mutate('kopfexamples', { operations: ['CREATE'] }, function admitted({ patch }) {
  patch.metadata = { labels: { 'soak.causeway.dev/admitted': 'true' } };
});

export default op;
