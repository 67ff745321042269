/**
 * The crash benchmark's Causeway side (bench/crash.ts): the create handler of causeway-operator.ts,
 * which also records each call as one line appended to $BENCH_CALL_LOG:
 * `<epoch ms> <name> <idempotency key> <retry>`. Equivalent to kopf_crash.py.
 */
import { openSync, writeSync } from 'node:fs';
import { operator } from 'causeway/functions';

const path = process.env.BENCH_CALL_LOG;
if (!path) throw new Error('BENCH_CALL_LOG must name the file that records handler calls');
// O_APPEND: one write of one short line lands whole, after the others, even if the process dies.
const log = openSync(path, 'a');

const op = operator({ name: 'bench' });

op.on.create('kopfexamples', async function create_fn({ name, idempotencyKey, retry }) {
  writeSync(log, `${Date.now()} ${name} ${idempotencyKey} ${retry}\n`);
  return { message: `hello ${name}` };
});

export default op;
