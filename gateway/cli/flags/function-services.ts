/**
 * The function services a gateway calls, and the flags that say, per service, what it may reach and
 * how it is trusted (gateway; rbac and explain read them as the gateway does).
 */
import { parse as parseYaml } from 'yaml';
import type { ServiceScope } from '../../../protocol/index.ts';
import { parseScope } from '../../dispatch/scope.ts';
import type { FunctionEndpoint } from '../../dispatch/services.ts';
import { DEFAULT_SETTINGS, type Settings } from '../../settings.ts';
import { flag, group, UsageError } from '../command-line.ts';
import type { ReadText } from '../process.ts';
import { integer, namespacedName } from '../values.ts';

const MiB = 1024 * 1024;

export const FUNCTION_SCOPE = flag({
  name: 'function-scope',
  value: '<name>=<file>',
  multiple: true,
  description:
    "What that service may reach, pinned: a YAML file of resources (what its handlers watch, are sent and patch), admission (what its webhooks review), children (the kinds its apply may create, in the handled object's namespace), namespaces (narrowing) and impersonate (<ns>/<name>: the ServiceAccount --impersonate writes as). Each --functions service needs one, unless --unscoped. See docs/security.md.",
});

export const FUNCTION_TLS = flag({
  name: 'function-tls',
  value: '<name>=<ns/secret>',
  multiple: true,
  description:
    "Issue that service a serving certificate for the host of its https URL (<svc>.<ns>.svc, both forms) into this Secret, which its pod mounts for serve --tls-cert/--tls-key; renewed before its end. The service is then trusted with that CA's certificates only.",
});

export const FUNCTION_CERTIFICATES = flag({
  name: 'function-certificates',
  value: '<ns/name>',
  description:
    'Keep the CA that issues those certificates in this Secret, made there at the first start, read by the gateway only.',
});

export const FUNCTION_SECRET = flag({
  name: 'function-secret',
  value: '<name>=<file>',
  multiple: true,
  description: 'A secret shared with that service alone.',
});

/** The function services a gateway calls, and how it trusts them (gateway). */
export const FUNCTION_SERVICES = group(
  'Function services',
  flag({
    name: 'functions',
    value: '<name>=<url>',
    multiple: true,
    description:
      'A function service: the name it must answer to (its calls are signed for it) and its base URL; repeat for several.',
  }),
  FUNCTION_SCOPE,
  flag({
    name: 'unscoped',
    description:
      "Serve --functions services given no --function-scope: what they answer is done with the gateway's rights (a warning names each).",
  }),
  flag({
    name: 'function-services',
    value: '<ns>',
    description:
      'Also serve the function services named by FunctionService objects in this namespace, as they come, change and go; their status says what the gateway found (see `causeway crd`). Their URLs may not name a loopback or link-local host (the cloud metadata service).',
  }),
  flag({
    name: 'allow-loopback-functions',
    description:
      "Let FunctionService objects name loopback and link-local hosts: for a gateway on a developer's machine.",
  }),
  flag({
    name: 'function-concurrency',
    value: '<n>',
    default: String(DEFAULT_SETTINGS.calls.concurrencyPerService),
    description:
      'Calls at once to one function service (its budget of calls in flight); the others wait their turn.',
  }),
  flag({
    name: 'function-reply-mib',
    value: '<MiB>',
    default: String(DEFAULT_SETTINGS.calls.replyBytesPerService / MiB),
    description: `Bytes of one function service's replies the gateway holds at once, in MiB (${DEFAULT_SETTINGS.calls.maxReplyBytes / MiB} at least, the longest reply): its next replies wait while they are held; other services' do not.`,
  }),
  flag({
    name: 'function-daemons',
    value: '<n>',
    default: String(DEFAULT_SETTINGS.calls.daemonsPerService),
    description:
      'Daemons of one function service whose calls are open at once; the others wait their turn, a round each.',
  }),
  flag({
    name: 'function-index-mib',
    value: '<MiB>',
    default: String(DEFAULT_SETTINGS.calls.indexBytesPerService / MiB),
    description:
      "Bytes of one function service's index values the gateway keeps, in MiB: an object's values beyond it are left out, with an error naming it.",
  }),
  flag({
    name: 'functions-ca',
    value: '<file>',
    default: "the system's roots",
    description:
      "The CA to trust for https function services; not for one given --function-tls, pinned to the gateway's own CA.",
  }),
  FUNCTION_TLS,
  FUNCTION_CERTIFICATES,
  flag({
    name: 'allow-plain-http',
    description:
      'Call function services over plain HTTP beyond this host: only where the network encrypts (a mesh); a warning names each such service. Refused otherwise.',
  }),
);

export const ENDPOINT = '<name>=<url>';

/** The budgets of each function service the flags set (--function-reply-mib, --function-daemons, --function-index-mib). */
export function budgetSettings(values: {
  'function-reply-mib'?: string;
  'function-daemons'?: string;
  'function-index-mib'?: string;
}): Partial<Settings['calls']> {
  const least = (flag: string, value: string | undefined, minimum: number) => {
    if (value === undefined) return undefined;
    const read = integer(value, flag);
    if (read < minimum) throw new UsageError(`${flag} expects at least ${minimum}, got ${read}`);
    return read;
  };
  const replyMib = least(
    '--function-reply-mib',
    values['function-reply-mib'],
    DEFAULT_SETTINGS.calls.maxReplyBytes / MiB,
  );
  const daemons = least('--function-daemons', values['function-daemons'], 1);
  const indexMib = least('--function-index-mib', values['function-index-mib'], 1);
  return {
    ...(replyMib === undefined ? {} : { replyBytesPerService: replyMib * MiB }),
    ...(daemons === undefined ? {} : { daemonsPerService: daemons }),
    ...(indexMib === undefined ? {} : { indexBytesPerService: indexMib * MiB }),
  };
}

/**
 * The --functions services and what the per-service flags give each, by name: the gateway's own
 * reading, which `causeway rbac` (and the check at start) shares.
 */
export function functionServiceFlags(
  values: {
    functions?: string[];
    'function-scope'?: string[];
    'function-tls'?: string[];
    'function-secret'?: string[];
    'function-certificates'?: string;
  },
  readText: ReadText,
) {
  const functions = (values.functions ?? []).map(functionEndpoint);
  const served = new Set(functions.map((endpoint) => endpoint.name));
  const secretFiles = perService(
    values['function-secret'],
    '--function-secret',
    '<name>=<file>',
    served,
    (file) => file,
  );
  const certificates = perService(
    values['function-tls'],
    '--function-tls',
    '<name>=<namespace>/<secret>',
    served,
    (secret) => namespacedName(secret, '--function-tls'),
  );
  if (certificates.size > 0 && !values['function-certificates'])
    throw new UsageError(
      '--function-tls needs --function-certificates <ns/name>, the Secret of the CA that issues them',
    );
  const scopes = perService(
    values['function-scope'],
    '--function-scope',
    '<name>=<file>',
    served,
    (file, name) => scopeFile(readText, file, name),
  );
  return { functions, served, scopes, certificates, secretFiles };
}

/** `billing=http://billing-functions:8080`: the service's name is pinned, not learnt from the service. */
export function functionEndpoint(value: string): FunctionEndpoint {
  const match = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?)=(https?:\/\/.+)$/.exec(value);
  if (!match) {
    throw new UsageError(
      `--functions expects ${ENDPOINT}, the service's name and its URL (e.g. kopfexample=http://kopfexample-functions:8080), got "${value}"`,
    );
  }
  return { name: match[1] as string, url: match[3] as string };
}

/**
 * A per-service flag's values (`<name>=<value>`, `expects` saying what the value is), by service name,
 * each read by `parse` (undefined: malformed) and naming a --functions service.
 */
export function perService<T>(
  given: readonly string[] | undefined,
  flag: string,
  expects: string,
  served: ReadonlySet<string>,
  parse: (value: string, name: string) => T | undefined,
): Map<string, T> {
  const values = new Map<string, T>();
  for (const each of given ?? []) {
    const match = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?)=(.+)$/.exec(each);
    const [name, value] = match ? [match[1] as string, match[3] as string] : [];
    const parsed = name === undefined || value === undefined ? undefined : parse(value, name);
    if (name === undefined || parsed === undefined)
      throw new UsageError(`${flag} expects ${expects}, got "${each}"`);
    if (!served.has(name)) throw new UsageError(`${flag} names "${name}", which no --functions gives`);
    values.set(name, parsed);
  }
  return values;
}

/** The scope pinned for service `name` in `file` (`/etc/causeway/billing-scope.yaml`), read and checked. */
function scopeFile(readText: ReadText, file: string, name: string): ServiceScope {
  try {
    return parseScope(parseYaml(readText(file)), `the scope of "${name}" in ${file}`);
  } catch (error) {
    throw new UsageError(`--function-scope ${name}: ${error instanceof Error ? error.message : error}`);
  }
}
