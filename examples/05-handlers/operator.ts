/**
 * One handler for each cause of a KopfExample's life, as Kopf's on.create/update/delete/resume/field.
 * Results land in status.<handler id>; delete handlers' results are not stored (the object is going).
 */
import { operator } from 'causeway/functions';

const op = operator({ name: 'handlers', scope: { resources: ['kopfexamples.kopf.dev'] } });

// The object is seen for the first time: `new` is its essence (spec, labels, annotations), no `old`.
op.on.create('kopfexamples', async function create_fn({ name, spec, logger }) {
  logger.info(`created ${name} with spec ${JSON.stringify(spec)}`);
  return { message: `created ${name}` };
});

// Its essence changed since it was last handled: `old` and `new` are the essence before and after,
// `diff` lists the changes as [operation, path, old value, new value].
op.on.update('kopfexamples', async function update_fn({ name, old, new: current, diff, logger }) {
  const spec = (essence: unknown) => JSON.stringify((essence as { spec?: unknown }).spec);
  logger.info(`updated ${name}: spec ${spec(old)} -> ${spec(current)}`);
  return { diff };
});

// The operator started and found the object already handled: nothing changed while it was away.
op.on.resume('kopfexamples', async function resume_fn({ name, logger }) {
  logger.info(`resumed ${name}`);
  return { message: `resumed ${name}` };
});

// The object is being deleted: the gateway's finalizer holds it in the API until this has run.
op.on.delete('kopfexamples', async function delete_fn({ name, meta, logger }) {
  logger.info(
    `deleting ${name} (deletionTimestamp ${meta.deletionTimestamp}, finalizers ${meta.finalizers?.join(',')})`,
  );
});

// spec.field appeared or changed (on creation too): `old` and `new` are that field's values, undefined
// when it is absent. (A result is merge-patched into the status, where a null member would be dropped.)
op.on.field('kopfexamples', 'spec.field', async function field_fn({ old, new: current, logger }) {
  logger.info(`spec.field: ${JSON.stringify(old)} -> ${JSON.stringify(current)}`);
  return { change: [old ?? null, current ?? null] };
});

export default op;
