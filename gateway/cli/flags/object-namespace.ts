import { flag } from '../command-line.ts';

/** The namespace of the one object a command acts on (release, explain). */
export const OBJECT_NAMESPACE = flag({
  name: 'namespace',
  short: 'n',
  value: '<ns>',
  default: 'default',
  description: "The object's namespace, for a namespaced resource.",
});
