import type { GroupValues } from '../../command-line.ts';
import { type IDENTITY, identityOf } from '../../flags/identity.ts';
import type { RELEASED_OBJECT } from './flags.ts';
import type { ReleaseOptions } from './release.ts';

/** The object `causeway release` releases, and the finalizer and field manager of the identity given. */
export function releaseOptions(
  target: { resource: string; name: string },
  values: GroupValues<typeof RELEASED_OBJECT | typeof IDENTITY>,
): ReleaseOptions {
  const { finalizer, fieldManager } = identityOf(values);
  return { ...target, finalizer, fieldManager, ...(values.namespace ? { namespace: values.namespace } : {}) };
}
