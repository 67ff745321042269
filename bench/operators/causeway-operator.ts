/** The benchmark's Causeway side: one create handler, equivalent to kopf_operator.py. */
import { operator } from 'causeway/functions';

const op = operator({ name: 'bench' });

op.on.create('kopfexamples', async function create_fn({ name }) {
  return { message: `hello ${name}` };
});

export default op;
