/** An operator module as users write it; the runtime tests serve it in-process and bundled on workerd. */
import { operator, TemporaryError } from 'causeway/functions';

const op = operator({ name: 'kopfexample' });

op.on.create('kopfexamples', async function create_fn({ spec, name, logger }) {
  logger.info(`creating ${name}`);
  return { message: `hello ${name}`, field: spec.field };
});

op.on.create('kopfexamples.kopf.dev', function wait_for_children() {
  throw new TemporaryError('children are not ready', { delay: 10 });
});

export default op;
