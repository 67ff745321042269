/** An operator module as users write it; the runtime tests serve it in-process and bundled on workerd. */
import { operator, PRESENT, TemporaryError } from 'causeway/functions';

// A small body limit, so that the runtime tests can go over it with little to send.
const op = operator({ name: 'kopfexample', maxBodyBytes: 64 * 1024 });

op.on.create('kopfexamples', async function create_fn({ spec, name, logger }) {
  logger.info(`creating ${name}`);
  return { message: `hello ${name}`, field: spec.field };
});

op.on.create('kopfexamples.kopf.dev', function wait_for_children() {
  throw new TemporaryError('children are not ready', { delay: 10 });
});

// Counts the changes of spec.field in the memo and mirrors the new value into a label.
op.on.field(
  'kopfexamples',
  'spec.field',
  { labels: { app: PRESENT } },
  function mirror_field({ new: value, memo, patch }) {
    const changes = ((memo.changes as number | undefined) ?? 0) + 1;
    memo.changes = changes;
    patch.metadata = { labels: { field: String(value) } };
    return { changes };
  },
);

export default op;
