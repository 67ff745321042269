/** The smallest operator: greet every new KopfExample; the greeting lands in status.create_fn. */
import { operator } from 'causeway/functions';

const op = operator({ name: 'kopfexample' });

op.on.create('kopfexamples', async function create_fn({ spec, name, logger }) {
  logger.info(`creating ${name} with spec ${JSON.stringify(spec)}`);
  return { message: `hello ${name}` };
});

export default op;
