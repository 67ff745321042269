/** The flags of `causeway freeze` and `causeway resume`, checked. */
import { DEFAULT_IDENTITY } from '../../../identity.ts';
import { type GroupValues, UsageError } from '../../command-line.ts';
import type { PEERED_IDENTITY } from '../../flags/identity.ts';
import { peeringNamespace } from '../../flags/peering.ts';
import type { Whereabouts } from '../../process.ts';
import { integer } from '../../values.ts';
import type { FREEZE, RESUMED } from './flags.ts';

/** What `causeway freeze` holds, but the client and who holds it. */
export function freezeOptions(
  values: GroupValues<typeof FREEZE | typeof PEERED_IDENTITY>,
  whereabouts: Whereabouts,
): { namespace: string; prefix: string; lifetimeS?: number; message: string; waitS: number } {
  const lifetime = values.lifetime === undefined ? undefined : integer(values.lifetime, '--lifetime');
  if (lifetime === 0) throw new UsageError('--lifetime expects at least 1');
  return {
    ...frozenGateways(values, whereabouts),
    ...(lifetime === undefined ? {} : { lifetimeS: lifetime }),
    message: values.message ?? '',
    waitS: integer(values.wait ?? '60', '--wait'),
  };
}

/** Which gateways `causeway freeze` and `causeway resume` act on: their peering namespace and identity. */
export function frozenGateways(
  values: GroupValues<typeof RESUMED | typeof PEERED_IDENTITY>,
  whereabouts: Whereabouts,
): { namespace: string; prefix: string } {
  return {
    namespace: peeringNamespace(values['peering-namespace'], whereabouts),
    prefix: values['annotation-prefix'] ?? DEFAULT_IDENTITY.annotationPrefix,
  };
}
