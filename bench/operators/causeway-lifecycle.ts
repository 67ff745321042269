/**
 * The API-writes benchmark's Causeway side (bench/writes.ts): create and update handlers returning a
 * result, and a delete handler that returns one when $BENCH_DELETE_RETURNS is `result` and nothing
 * when it is `nothing`. Equivalent to kopf_lifecycle.py. With $BENCH_ADMISSION set, also a validating
 * handler that lets everything through: the gateway then serves admission for the resource, and its
 * own mutating webhook puts the finalizer on at creation.
 */
import { operator } from 'causeway/functions';

const deleteReturns = process.env.BENCH_DELETE_RETURNS;
if (deleteReturns !== 'result' && deleteReturns !== 'nothing')
  throw new Error('BENCH_DELETE_RETURNS must be "result" or "nothing"');

const op = operator({ name: 'bench' });

op.on.create('kopfexamples', async function create_fn({ name }) {
  return { message: `created ${name}` };
});

op.on.update('kopfexamples', async function update_fn({ name }) {
  return { message: `updated ${name}` };
});

if (deleteReturns === 'result') {
  op.on.delete('kopfexamples', async function delete_fn({ name }) {
    return { message: `deleted ${name}` };
  });
} else {
  op.on.delete('kopfexamples', async function delete_fn() {});
}

if (process.env.BENCH_ADMISSION) op.on.validate('kopfexamples', function allow() {});

export default op;
