/**
 * How handlers fail, as in Kopf: a TemporaryError is retried after the delay it names, a PermanentError
 * is never retried, and any other error is retried after the handler's `backoff`, `retries` times at most.
 * None of them stops the others: each handler has its own progress on the object.
 */
import { operator, PermanentError, TemporaryError } from 'causeway/functions';

const op = operator({ name: 'exceptions', scope: { resources: ['kopfexamples.kopf.dev'] } });

// Not ready on the first two attempts: each asks to be called again a second later.
op.on.create('kopfexamples', async function flaky_fn({ retry, runtime, logger }) {
  if (retry < 2) throw new TemporaryError(`the backend is warming up (attempt ${retry + 1})`, { delay: 1 });
  logger.info(`done on attempt ${retry + 1}, ${runtime} ms after the first`);
  return { retries: retry, runtime };
});

// Retrying cannot help: the failure is recorded and the handler is not called again for this change.
op.on.create('kopfexamples', async function doomed_fn({ name }) {
  throw new PermanentError(`${name} asks for something this operator can never do`);
});

// A bug, not a decision: retried every second, given up as failed after three attempts.
op.on.create('kopfexamples', { retries: 3, backoff: 1 }, async function buggy_fn({ spec }) {
  const { replicas } = spec.size as { replicas: number }; // a TypeError: this object has no spec.size
  return { replicas };
});

export default op;
