/** The smallest operator: greet every new KopfExample; the greeting lands in status.create_fn. */
import { operator } from 'causeway/functions';

// What it needs the gateway to reach for it: a deployed gateway pins at most this (docs/security.md).
const op = operator({ name: 'kopfexample', scope: { resources: ['kopfexamples.kopf.dev'] } });

op.on.create('kopfexamples', async function create_fn({ spec, name, logger }) {
  logger.info(`creating ${name} with spec ${JSON.stringify(spec)}`);
  return { message: `hello ${name}` };
});

export default op;
