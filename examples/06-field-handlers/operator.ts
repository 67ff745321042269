/**
 * Handlers about one field, as Kopf's on.field and `field=` with `old=`/`new=` filters: the gateway
 * calls them only for changes that touch the field (and match the filters), and gives them the field's
 * values rather than the whole object's. Changes they do not concern cost them no call.
 */
import { ABSENT, operator, PRESENT } from 'causeway/functions';

const op = operator({ name: 'field-handlers', scope: { resources: ['kopfexamples.kopf.dev'] } });

// Every change, for contrast: old/new/diff are about the whole essence.
op.on.update('kopfexamples', async function update_fn({ diff }) {
  return { paths: diff?.map(([, path]) => path.join('.')) };
});

// spec.field appeared (on creation too), changed, or went away: old/new are its values.
op.on.field('kopfexamples', 'spec.field', async function field_fn({ old, new: current, diff, logger }) {
  logger.info(`spec.field: ${JSON.stringify(old)} -> ${JSON.stringify(current)}`);
  // A list: in the status, which results are merge-patched into, a null member would be dropped.
  return { change: [old ?? null, current ?? null], diff };
});

// Only when spec.field is set back to its default, whatever it was before.
op.on.update(
  'kopfexamples',
  { id: 'field_reset', field: 'spec.field', new: 'value' },
  async function reset({ old, logger }) {
    logger.info(`spec.field is back to its default, from ${JSON.stringify(old)}`);
    return { from: old };
  },
);

// Only when spec.field is removed.
op.on.update(
  'kopfexamples',
  { id: 'field_removed', field: 'spec.field', old: PRESENT, new: ABSENT },
  async function removed({ old, logger }) {
    logger.info(`spec.field was removed; it was ${JSON.stringify(old)}`);
    return { was: old };
  },
);

export default op;
