/**
 * Which objects a gateway serves, and how it keeps their state: run, gateway and dev take the group;
 * rbac and explain take some of its flags.
 */
import { DEFAULT_SETTINGS } from '../../settings.ts';
import { KOPF_PREFIX } from '../../state/kopf.ts';
import { type FlagValues, flag, type GroupValues, group, UsageError } from '../command-line.ts';
import { DNS_SUBDOMAIN, oneOf } from '../values.ts';

export const STATE_IN = flag({
  name: 'state-in',
  value: '<where>',
  description:
    "Where to record that an object was handled: auto (the status when the resource's status keeps it, else annotations; the default) or annotations.",
});

export const ADOPT_KOPF_STATE = flag({
  name: 'adopt-kopf-state',
  value: '<prefix>',
  description: `Take over from a Kopf operator that kept its state under this annotation prefix (Kopf's default: ${KOPF_PREFIX}): what it handled is not handled again, what changed since is an update. See docs/migrating-from-kopf.md.`,
});

export const NAMESPACE = flag({
  name: 'namespace',
  short: 'n',
  value: '<ns>',
  multiple: true,
  description:
    'Serve this namespace; repeat for several. Globs (team-*) and negations (!kube-*) serve namespaces as they appear and disappear.',
});

export const ALL_NAMESPACES = flag({
  name: 'all-namespaces',
  short: 'A',
  description: 'Serve every namespace (the default when no --namespace is given).',
});

export const SERVE_OWN_NAMESPACE = flag({
  name: 'serve-own-namespace',
  description:
    "Serve the namespace the gateway runs in ($POD_NAMESPACE) to the function services too: by default no handler sees its objects, no child or event goes there and no admission review of it is sent (its Secrets, keys and account are the gateway's).",
});

/** Which objects a gateway serves, and how (run, gateway, dev). */
export const OBJECTS = group(
  'Objects',
  NAMESPACE,
  ALL_NAMESPACES,
  SERVE_OWN_NAMESPACE,
  flag({
    name: 'concurrency',
    value: '<n>',
    default: String(DEFAULT_SETTINGS.processing.concurrency),
    description:
      'Objects processed at once, per resource; each service on it holds its share of them (concurrency / services) at most.',
  }),
  flag({
    name: 'function-timeout',
    value: '<s>',
    default: String(DEFAULT_SETTINGS.calls.timeoutMs / 1000),
    description: 'Seconds one function call may take.',
  }),
  STATE_IN,
  ADOPT_KOPF_STATE,
);

/** Where the gateway keeps its state (--state-in) and whose Kopf state it adopts (--adopt-kopf-state). */
export function stateOptions(values: FlagValues<typeof STATE_IN | typeof ADOPT_KOPF_STATE>): {
  stateIn: 'auto' | 'annotations';
  adoptKopf: string | undefined;
} {
  const stateIn = oneOf(values['state-in'] ?? 'auto', ['auto', 'annotations'], '--state-in');
  const adoptKopf = values['adopt-kopf-state'];
  if (adoptKopf !== undefined && !DNS_SUBDOMAIN.test(adoptKopf)) {
    throw new UsageError(
      `--adopt-kopf-state expects the annotation prefix of the Kopf operator's state (Kopf's default: ${KOPF_PREFIX}), got "${adoptKopf}"`,
    );
  }
  return { stateIn, adoptKopf };
}

/** The warning for a gateway told neither --namespace nor --all-namespaces; undefined when told either. */
export function namespacesWarning(values: GroupValues<typeof OBJECTS>): string | undefined {
  return values.namespace?.length || values['all-namespaces']
    ? undefined
    : 'neither --namespace nor --all-namespaces given: serving all namespaces';
}
