/**
 * Sub-handlers: one handler runs a sub-handler per item of its spec, created at run time (Kopf's
 * `execute`). Each has its own progress and retries: a sub-handler that succeeded is not run again
 * when another one is retried.
 */
import { operator, TemporaryError } from 'causeway/functions';

const op = operator({ name: 'subhandlers', scope: { resources: ['kopfexamples.kopf.dev'] } });

op.on.create('kopfexamples', async function create_fn({ spec, execute, logger }) {
  const items = Array.isArray(spec.items) ? spec.items.map(String) : [];
  await execute(
    Object.fromEntries(
      items.map((item) => [
        `item-${item}`,
        async ({ retry }) => {
          // The second item is not ready on the first attempt: only it is tried again.
          if (item === items[1] && retry === 0)
            throw new TemporaryError(`${item} is not ready yet`, { delay: 0.2 });
          logger.info(`handled ${item} (attempt ${retry + 1})`);
        },
      ]),
    ),
  );
  return { items: items.length };
});

export default op;
