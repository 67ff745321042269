/**
 * An operator module for test/e2e/explain.test.ts, whose objects end in each state `causeway explain`
 * tells apart, by their `spec.mode`: `ok` handled, `retry` retrying for an hour, `fail` failed for good,
 * `stuck` held in deletion by a delete handler that keeps failing temporarily. One handler is for
 * objects labelled app=web only, one has a `when` callback. It verifies calls with $CAUSEWAY_SECRET.
 */
import { operator, PermanentError, TemporaryError } from 'causeway/functions';

const op = operator({ name: 'explained' });
const HOUR = 3600;

op.on.create('kopfexamples', async function create_fn({ spec, name }) {
  if (spec.mode === 'retry') throw new TemporaryError('the backend is not ready', { delay: HOUR });
  if (spec.mode === 'fail') throw new PermanentError('the spec cannot be served');
  return { message: `hello ${name}` };
});

op.on.create('kopfexamples', { labels: { app: 'web' } }, async function web_only() {
  return { web: true };
});

op.on.create('kopfexamples', { when: ({ spec }) => spec.mode === 'chosen' }, async function chosen_fn() {
  return { chosen: true };
});

op.on.delete('kopfexamples', async function delete_fn({ spec }) {
  if (spec.mode === 'stuck') throw new TemporaryError('the cleanup is still running', { delay: HOUR });
});

export default op;
