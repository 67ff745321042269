/** The API-writes benchmark's Causeway side (bench/writes.ts): create, update and delete handlers, each
 * returning a result. Equivalent to kopf_lifecycle.py. */
import { operator } from 'causeway/functions';

const op = operator({ name: 'bench' });

op.on.create('kopfexamples', async function create_fn({ name }) {
  return { message: `created ${name}` };
});

op.on.update('kopfexamples', async function update_fn({ name }) {
  return { message: `updated ${name}` };
});

op.on.delete('kopfexamples', async function delete_fn({ name }) {
  return { message: `deleted ${name}` };
});

export default op;
