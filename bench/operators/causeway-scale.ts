/**
 * The scale benchmark's Causeway side (bench/scale.ts): create, update and delete handlers (so a
 * finalizer), each recording its call as one line appended to $BENCH_CALL_LOG:
 * `<epoch ms> <handler> <name>`. Equivalent to kopf_scale.py.
 */
import { openSync, writeSync } from 'node:fs';
import { operator } from 'causeway/functions';

const path = process.env.BENCH_CALL_LOG;
if (!path) throw new Error('BENCH_CALL_LOG must name the file that records handler calls');
// O_APPEND: one write of one short line lands whole, after the others.
const log = openSync(path, 'a');

const op = operator({ name: 'bench' });

op.on.create('kopfexamples', async function create_fn({ name }) {
  writeSync(log, `${Date.now()} create ${name}\n`);
  return { message: `created ${name}` };
});

op.on.update('kopfexamples', async function update_fn({ name }) {
  writeSync(log, `${Date.now()} update ${name}\n`);
  return { message: `updated ${name}` };
});

op.on.delete('kopfexamples', async function delete_fn({ name }) {
  writeSync(log, `${Date.now()} delete ${name}\n`);
});

export default op;
