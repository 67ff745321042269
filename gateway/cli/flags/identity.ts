/** The names a gateway keeps its state under: two deployments with different ones serve the same objects apart. */
import { DEFAULT_IDENTITY, type Identity } from '../../identity.ts';
import { flag, type GroupValues, group } from '../command-line.ts';

const ANNOTATION_PREFIX = flag({
  name: 'annotation-prefix',
  value: '<prefix>',
  default: DEFAULT_IDENTITY.annotationPrefix,
  description: 'Prefix of its annotations.',
});

/** Whose gateways a freeze pauses (freeze, resume). */
export const PEERED_IDENTITY = group('Identity', ANNOTATION_PREFIX);

/** The names a gateway keeps its state under (run, gateway, dev, release, explain). */
export const IDENTITY = group(
  'Identity, so that two deployments can serve the same objects',
  flag({
    name: 'status-key',
    value: '<key>',
    default: DEFAULT_IDENTITY.statusKey,
    description: "Key of the gateway's state under status.",
  }),
  ANNOTATION_PREFIX,
  flag({
    name: 'finalizer',
    value: '<name>',
    default: DEFAULT_IDENTITY.finalizer,
    description: 'Its finalizer.',
  }),
  flag({
    name: 'field-manager',
    value: '<name>',
    default: DEFAULT_IDENTITY.fieldManager,
    description: 'The field manager of its writes.',
  }),
);

export function identityOf(values: GroupValues<typeof IDENTITY>): Identity {
  return {
    statusKey: values['status-key'] ?? DEFAULT_IDENTITY.statusKey,
    annotationPrefix: values['annotation-prefix'] ?? DEFAULT_IDENTITY.annotationPrefix,
    finalizer: values.finalizer ?? DEFAULT_IDENTITY.finalizer,
    fieldManager: values['field-manager'] ?? DEFAULT_IDENTITY.fieldManager,
  };
}
