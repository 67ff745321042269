/**
 * The lifecycle crash benchmark's Causeway side (bench/crash-lifecycle.ts): create, update and delete
 * handlers (the delete handler makes the gateway hold each object with its finalizer until it has
 * run), each taking $BENCH_HANDLER_MS as a call to another system would, so that kills find calls in
 * flight. Each call is recorded as one line appended to $BENCH_CALL_LOG, when it starts:
 * `<epoch ms> <handler>/<name> <idempotency key> <retry>`. Equivalent to kopf_crash_lifecycle.py.
 */
import { openSync, writeSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { operator } from 'causeway/functions';

const path = process.env.BENCH_CALL_LOG;
if (!path) throw new Error('BENCH_CALL_LOG must name the file that records handler calls');
const handlerMs = Number(process.env.BENCH_HANDLER_MS ?? 0);
// O_APPEND: one write of one short line lands whole, after the others, even if the process dies.
const log = openSync(path, 'a');

const op = operator({ name: 'bench' });

op.on.create('kopfexamples', async function create_fn({ name, idempotencyKey, retry }) {
  writeSync(log, `${Date.now()} create/${name} ${idempotencyKey} ${retry}\n`);
  await sleep(handlerMs);
  return { message: `created ${name}` };
});

// Its result names the field it saw: the bench checks that it is the field as last changed.
op.on.update('kopfexamples', async function update_fn({ name, spec, idempotencyKey, retry }) {
  writeSync(log, `${Date.now()} update/${name} ${idempotencyKey} ${retry}\n`);
  await sleep(handlerMs);
  return { field: String(spec.field) };
});

op.on.delete('kopfexamples', async function delete_fn({ name, idempotencyKey, retry }) {
  writeSync(log, `${Date.now()} delete/${name} ${idempotencyKey} ${retry}\n`);
  await sleep(handlerMs);
});

export default op;
