/**
 * A function service's scope: what the gateway's operator pinned for it (a FunctionService's
 * `spec.scope`, `--function-scope`), which the service can narrow but never widen. Its handlers are
 * served on the resources of the pin only; its admission handlers review those of `admission` only;
 * what its answers ask (a patch, objects to apply, events) stays on the handled object and its
 * children of the `children` kinds, in the object's namespace. A service compromised is then as
 * dangerous as its pin, not as the gateway's own rights.
 */
import type {
  HandlerSpec,
  KubernetesEvent,
  KubernetesObject,
  ObjectReference,
  ObjectToApply,
  Outcome,
  ServiceScope,
} from '../../protocol/index.ts';
import { isObject } from '../../protocol/json.ts';
import { SERVICE_ACCOUNT_PATTERN } from '../../protocol/schema/manifest.ts';
import type { Identity } from '../identity.ts';
import type { ServiceAccountName } from '../kube/client.ts';
import type { DiscoveredResource } from '../kube/discovery.ts';
import { writtenAs } from '../kube/written-as.ts';
import type { FunctionService } from './function-service.ts';
import { podViolations } from './workloads.ts';

/** What a service asked beyond its scope: its call fails, or it is not served, with this reason. */
export class ScopeError extends Error {
  override name = 'ScopeError';
}

const FIELDS: ReadonlySet<string> = new Set([
  'resources',
  'admission',
  'children',
  'namespaces',
  'serviceAccount',
  'secrets',
  'impersonate',
]);
/** `plural` or `plural.group`, as kubectl names a resource, or `*` for every one. */
const RESOURCE_NAME = /^(\*|[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)$/;
/** A namespace, a glob of one, or either negated. */
const NAMESPACE_PATTERN = /^!?[a-z0-9*]([-a-z0-9*]*[a-z0-9*])?$/;
/** An object's name in a namespace (a ServiceAccount's, a Secret's): a DNS subdomain. */
const OBJECT_NAME = /^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
/** The ServiceAccount a scope lets children's pods run as when it names none: the namespace's own. */
export const DEFAULT_SERVICE_ACCOUNT = 'default';
const SERVICE_ACCOUNT = new RegExp(SERVICE_ACCOUNT_PATTERN);
/** Room for any real operator's scope, and a bound on what a FunctionService may make the gateway hold. */
const MAX_ENTRIES = 256;

/** A scope as given (a file, an object's spec, a manifest), checked: own keys, known fields, well-formed names. */
export function parseScope(value: unknown, where: string): ServiceScope {
  if (!isObject(value)) throw new ScopeError(`${where} is not an object`);
  for (const key of Object.keys(value)) {
    if (!FIELDS.has(key)) {
      throw new ScopeError(
        `${where} has "${key}": a scope has resources, admission, children, namespaces, serviceAccount, secrets and impersonate`,
      );
    }
  }
  const list = (field: string, pattern: RegExp, what: string): string[] | undefined => {
    const entries = value[field];
    if (entries === undefined) return undefined;
    if (!Array.isArray(entries) || entries.length > MAX_ENTRIES) {
      throw new ScopeError(`${where}.${field} must be a list of at most ${MAX_ENTRIES} ${what}`);
    }
    for (const entry of entries) {
      if (typeof entry !== 'string' || !pattern.test(entry)) {
        throw new ScopeError(`${where}.${field} has ${JSON.stringify(entry)}, which is not ${what}`);
      }
    }
    return entries as string[];
  };
  const resourceNames = 'resources as kubectl names them (plural.group, or * for all)';
  const resources = list('resources', RESOURCE_NAME, resourceNames);
  if (!resources) throw new ScopeError(`${where}.resources is missing: the resources its handlers may watch`);
  const admission = list('admission', RESOURCE_NAME, resourceNames);
  const children = list('children', RESOURCE_NAME, resourceNames);
  const namespaces = list('namespaces', NAMESPACE_PATTERN, 'namespaces, globs or negations');
  const { serviceAccount } = value;
  if (
    serviceAccount !== undefined &&
    !(typeof serviceAccount === 'string' && OBJECT_NAME.test(serviceAccount))
  ) {
    throw new ScopeError(
      `${where}.serviceAccount is ${JSON.stringify(serviceAccount)}, which is not the name of a ServiceAccount`,
    );
  }
  const secrets = list('secrets', OBJECT_NAME, 'names of Secrets');
  const { impersonate } = value;
  if (impersonate !== undefined && (typeof impersonate !== 'string' || !SERVICE_ACCOUNT.test(impersonate))) {
    throw new ScopeError(
      `${where}.impersonate is ${JSON.stringify(impersonate)}, not a ServiceAccount as <namespace>/<name>`,
    );
  }
  return {
    resources,
    ...(admission ? { admission } : {}),
    ...(children ? { children } : {}),
    ...(namespaces ? { namespaces } : {}),
    ...(serviceAccount !== undefined ? { serviceAccount } : {}),
    ...(secrets ? { secrets } : {}),
    ...(impersonate !== undefined ? { impersonate } : {}),
  };
}

/**
 * The ServiceAccount a service's children and events are written as under --impersonate: the one its
 * scope names, else one of its own name in `namespace` (its FunctionService's, or the gateway's).
 */
export function serviceAccountOf(
  service: string,
  scope: ServiceScope | undefined,
  namespace: string,
): ServiceAccountName {
  const named = scope?.impersonate?.split('/');
  return named ? { namespace: named[0] as string, name: named[1] as string } : { namespace, name: service };
}

/** How a scope names a resource: `plural.group`, or `plural` in the core group. */
export function scopeName(resource: Pick<DiscoveredResource, 'plural' | 'group'>): string {
  return resource.group ? `${resource.plural}.${resource.group}` : resource.plural;
}

/** Whether the list names the resource, or every one. */
export function covers(list: readonly string[] | undefined, resource: DiscoveredResource): boolean {
  return list !== undefined && (list.includes('*') || list.includes(scopeName(resource)));
}

/**
 * What `declared` asks beyond `pin`, one line each; empty when the pin grants all of it. Not the
 * namespaces: a pin narrower than what a service declares leaves it fewer objects to handle, never a
 * handler it cannot serve, and the gateway holds it to the pin's either way.
 */
export function beyondPin(declared: ServiceScope, pin: ServiceScope): string[] {
  const beyond: string[] = [];
  for (const field of ['resources', 'admission', 'children'] as const) {
    const granted = pin[field] ?? [];
    for (const name of declared[field] ?? []) {
      if (!granted.includes('*') && !granted.includes(name)) beyond.push(`${field}: ${name}`);
    }
  }
  for (const name of declared.secrets ?? []) {
    if (!(pin.secrets ?? []).includes(name)) beyond.push(`secrets: ${name}`);
  }
  const account = declared.serviceAccount;
  if (account !== undefined && account !== (pin.serviceAccount ?? DEFAULT_SERVICE_ACCOUNT)) {
    beyond.push(`serviceAccount: ${account}`);
  }
  // Whom its writes are made as: only the pin says, and a service declaring another is asking for it.
  if (declared.impersonate !== undefined && declared.impersonate !== pin.impersonate) {
    beyond.push(`impersonate: ${declared.impersonate}`);
  }
  return beyond;
}

/** What the gateway holds answers to: its own identity, and how to learn which resource a kind is. */
export interface AnswerGuard {
  identity: Identity;
  /** The namespace the gateway runs in, where no answer's child or event may go (undefined: none). */
  readonly ownNamespace?: string | undefined;
  /** The resource of an apiVersion and kind (discovery), for the objects an answer applies or names. */
  resourceOf(apiVersion: string, kind: string): Promise<DiscoveredResource>;
  /**
   * The object as the API has it now, read with the gateway's own client, or as `account` when given
   * (--impersonate: as the one that would write it); undefined when there is none.
   */
  current(
    resource: DiscoveredResource,
    namespace: string,
    name: string,
    account?: ServiceAccountName,
  ): Promise<KubernetesObject | undefined>;
}

/** The guard of answers, and the check of a service's manifest as it connects. */
export interface ScopeGuard extends AnswerGuard {
  /** Throws why a service just connected may not be served: a handler beyond its scope, or keyed as the gateway's own. */
  vet(service: Pick<FunctionService, 'name' | 'scope' | 'manifest'>): Promise<void>;
}

/**
 * A call's guard (an object whose methods may be its class's), the object the call was about, and
 * the keys of its status other services' results are at.
 */
interface CallTarget {
  guard: AnswerGuard;
  object: KubernetesObject;
  othersResults: ReadonlySet<string>;
  /** Under --impersonate, the account the service's children and events are written as. */
  writer?: ServiceAccountName | undefined;
}

/**
 * Checks what an answer asks against the service's scope and the gateway's identity, and makes the
 * objects it applies children of the handled object; throws a ScopeError naming the first thing out of
 * bounds, so that nothing of the answer is applied. Without a pin (`--unscoped`), only the patch is
 * held: no service may touch the finalizers, owners, the gateway's own state or, at `othersResults`
 * (the ids other services bind on the resource), their results. With a `writer` (--impersonate), its
 * children and events are marked to be written as that account, and the children it would change are
 * read as that account too.
 */
export async function confineOutcomes(
  outcomes: Record<string, Outcome>,
  scope: ServiceScope | undefined,
  guard: AnswerGuard,
  object: KubernetesObject,
  othersResults: ReadonlySet<string> = new Set(),
  writer?: ServiceAccountName,
): Promise<Record<string, Outcome>> {
  const target = { guard, object, othersResults, writer };
  const confined: Record<string, Outcome> = {};
  for (const [id, outcome] of Object.entries(outcomes)) {
    confined[id] = await confineOutcome(outcome, `handler "${id}"`, scope, target);
  }
  return confined;
}

async function confineOutcome(
  outcome: Outcome,
  who: string,
  scope: ServiceScope | undefined,
  target: CallTarget,
): Promise<Outcome> {
  if (outcome.patch) checkPatch(outcome.patch, who, target.guard.identity, target.othersResults);
  checkOwnNamespace(outcome, who, target);
  let confined = outcome;
  if (scope && outcome.apply) {
    const apply: ObjectToApply[] = [];
    for (const [index, child] of outcome.apply.entries()) {
      apply.push(await confineChild(child, `${who}: apply[${index}]`, scope, target));
    }
    confined = { ...confined, apply };
  }
  if (scope && outcome.events) {
    const events: KubernetesEvent[] = [];
    for (const [index, event] of outcome.events.entries()) {
      events.push(await confineAbout(event, `${who}: events[${index}]`, scope, target));
    }
    confined = { ...confined, events };
  }
  const { writer } = target;
  if (writer && confined.apply) {
    confined = { ...confined, apply: confined.apply.map((child) => writtenAs(child, writer)) };
  }
  if (writer && confined.events) {
    confined = { ...confined, events: confined.events.map((event) => writtenAs(event, writer)) };
  }
  if (outcome.subhandlers) {
    const subhandlers: Record<string, Outcome> = {};
    for (const [id, sub] of Object.entries(outcome.subhandlers)) {
      subhandlers[id] = await confineOutcome(sub, `${who}, sub-handler "${id}"`, scope, target);
    }
    confined = { ...confined, subhandlers };
  }
  return confined;
}

/** Metadata that says who holds or owns the object, and the gateway's own record: never a handler's to patch. */
const GUARDED_METADATA = ['finalizers', 'ownerReferences', 'managedFields'] as const;

/**
 * Throws why a patch may not be applied: it changes who holds or owns the object, the gateway's own
 * record (in the status or in annotations), or another service's result; or it replaces the whole of
 * `metadata`, its annotations or `status`, which would wipe a record kept there.
 */
function checkPatch(
  patch: Record<string, unknown>,
  who: string,
  identity: Identity,
  othersResults: ReadonlySet<string>,
): void {
  const refuse = (path: string, why: string) => {
    throw new ScopeError(`${who}: its patch may not change ${path} (${why})`);
  };
  const { metadata, status } = patch;
  const wipes = "it would wipe the gateway's record and the other services' state kept there";
  for (const [path, value] of [
    ['metadata', metadata],
    ['metadata.annotations', isObject(metadata) ? metadata.annotations : undefined],
    ['status', status],
  ] as const) {
    if (value !== undefined && !isObject(value)) refuse(`${path} as a whole`, wipes);
  }
  if (isObject(metadata)) {
    for (const field of GUARDED_METADATA) {
      if (Object.hasOwn(metadata, field)) refuse(`metadata.${field}`, 'who holds and owns the object');
    }
    const prefix = `${identity.annotationPrefix}/`;
    for (const key of isObject(metadata.annotations) ? Object.keys(metadata.annotations) : []) {
      if (key.startsWith(prefix)) refuse(`the annotation ${key}`, "the gateway's own record");
    }
  }
  if (isObject(status) && Object.hasOwn(status, identity.statusKey)) {
    refuse(`status.${identity.statusKey}`, "the gateway's own record");
  }
  for (const key of isObject(status) ? Object.keys(status) : []) {
    if (othersResults.has(key)) refuse(`status.${key}`, "another service's result");
  }
}

/**
 * Nothing an answer asks goes to the gateway's own namespace, scoped or not: a child there could run
 * as the gateway's account or mount its keys, an event there could pass for the gateway's own.
 */
function checkOwnNamespace(outcome: Outcome, who: string, { guard, object }: CallTarget): void {
  const own = guard.ownNamespace;
  if (own === undefined) return;
  const refuse = (what: string) => {
    throw new ScopeError(
      `${who}: ${what} would be in namespace ${own}, the gateway's own, which it serves to no function service`,
    );
  };
  for (const [index, child] of (outcome.apply ?? []).entries()) {
    if ((child.metadata.namespace ?? object.metadata.namespace) === own) refuse(`apply[${index}]`);
  }
  for (const [index, event] of (outcome.events ?? []).entries()) {
    if ((event.about?.namespace ?? object.metadata.namespace) === own) refuse(`events[${index}]`);
  }
}

/** An owner reference to the handled object, as Kubernetes' garbage collector follows it. */
function ownerReferenceTo(object: KubernetesObject) {
  return {
    apiVersion: object.apiVersion,
    kind: object.kind,
    name: object.metadata.name,
    uid: object.metadata.uid,
    controller: true,
    blockOwnerDeletion: true,
  };
}

/**
 * An object to apply, as a child: of a kind of `children`, in the handled object's namespace, owned by
 * it (one without owner references is given one; `ownerReferences: []`, or an owner other than the
 * handled object, is refused), its pods within what the scope lets them use (workloads.ts), and either
 * new or one the handled object owns already.
 */
async function confineChild(
  child: ObjectToApply,
  who: string,
  scope: ServiceScope,
  target: CallTarget,
): Promise<ObjectToApply> {
  const { object } = target;
  const describeChild = `${child.kind} ${child.metadata.name ?? child.metadata.generateName ?? ''}`;
  const resource = await target.guard.resourceOf(child.apiVersion, child.kind);
  if (!covers(scope.children, resource)) {
    throw new ScopeError(
      `${who}: ${describeChild} is a ${scopeName(resource)}, not one of the kinds its scope lets it apply ` +
        `(children: ${(scope.children ?? []).join(', ') || 'none'})`,
    );
  }
  if (!resource.namespaced) {
    throw new ScopeError(
      `${who}: ${describeChild} is cluster-scoped: a service applies children in a namespace`,
    );
  }
  const namespace = object.metadata.namespace;
  if (namespace === undefined) {
    throw new ScopeError(`${who}: ${describeChild} would have no namespace: the handled object has none`);
  }
  if (child.metadata.namespace !== undefined && child.metadata.namespace !== namespace) {
    throw new ScopeError(
      `${who}: ${describeChild} is in namespace ${child.metadata.namespace}: children go to the object's own, ${namespace}`,
    );
  }
  const owners = (child.metadata as { ownerReferences?: unknown }).ownerReferences;
  if (Array.isArray(owners) && owners.length === 0) {
    throw new ScopeError(
      `${who}: ${describeChild} has ownerReferences: [], but every child is owned by the handled object`,
    );
  }
  if (owners !== undefined && !(Array.isArray(owners) && owners.every((owner) => ownedBy(owner, object)))) {
    throw new ScopeError(`${who}: ${describeChild} names an owner other than the handled object`);
  }
  const allowance = {
    serviceAccount: scope.serviceAccount ?? DEFAULT_SERVICE_ACCOUNT,
    secrets: scope.secrets ?? [],
  };
  const [first, ...more] = podViolations(child, allowance);
  if (first !== undefined) {
    const others = more.length > 0 ? ` (and ${more.length} more)` : '';
    throw new ScopeError(`${who}: ${describeChild}: ${first}${others}`);
  }
  const owned =
    owners === undefined
      ? { ...child, metadata: { ...child.metadata, ownerReferences: [ownerReferenceTo(object)] } }
      : child;
  const { name } = child.metadata;
  return name === undefined ? owned : ownOrNew(owned, `${who}: ${describeChild}`, resource, name, target);
}

function ownedBy(owner: unknown, object: KubernetesObject): boolean {
  return isObject(owner) && owner.uid === object.metadata.uid;
}

/**
 * A resourceVersion no object has: an apply that creates ignores it, one that would update an object
 * fails on it with a conflict (checked on the real apiserver by test/e2e/hostile/children.test.ts).
 */
export const NO_OBJECT_VERSION = '18446744073709551615';

/**
 * The child, if the object of its name is none or one the handled object owns (any other is refused),
 * carrying the resourceVersion read: an object changed, deleted or made between this read and the
 * apply then fails it with a conflict (409), and the cycle is run again, read afresh. What remains:
 * a child given only a `generateName` is named by the reactor after this check, from the handled
 * object's uid, and is not read: an object someone else put at that name before its first apply is
 * merged into.
 */
async function ownOrNew(
  child: ObjectToApply,
  who: string,
  resource: DiscoveredResource,
  name: string,
  { guard, object, writer }: CallTarget,
): Promise<ObjectToApply> {
  const namespace = object.metadata.namespace as string;
  // Read as whoever writes it: under --impersonate the service's account, so the gateway needs no rights on its children.
  const existing = await guard.current(resource, namespace, name, writer);
  const owners = existing?.metadata.ownerReferences;
  if (existing && !(Array.isArray(owners) && owners.some((owner) => ownedBy(owner, object)))) {
    throw new ScopeError(
      `${who} exists and is not owned by the handled object: a service may make objects, and change its own children only`,
    );
  }
  const resourceVersion = existing ? existing.metadata.resourceVersion : NO_OBJECT_VERSION;
  return { ...child, metadata: { ...child.metadata, resourceVersion } };
}

/**
 * An event is about the handled object, or an object of a child kind in its namespace: named there
 * when its reference names no namespace (it would go to `default`, where the API puts events about
 * cluster-scoped objects).
 */
async function confineAbout(
  event: KubernetesEvent,
  who: string,
  scope: ServiceScope,
  target: CallTarget,
): Promise<KubernetesEvent> {
  const about: ObjectReference | undefined = event.about;
  if (!about) return event;
  const { object } = target;
  const { namespace } = object.metadata;
  const placed =
    about.namespace === undefined && namespace ? { ...event, about: { ...about, namespace } } : event;
  const same =
    about.apiVersion === object.apiVersion &&
    about.kind === object.kind &&
    about.name === object.metadata.name &&
    (about.namespace ?? object.metadata.namespace) === object.metadata.namespace;
  if (same) return placed;
  const resource = await target.guard.resourceOf(about.apiVersion, about.kind);
  const inNamespace = about.namespace === undefined || about.namespace === object.metadata.namespace;
  if (!covers(scope.children, resource) || !resource.namespaced || !inNamespace) {
    throw new ScopeError(
      `${who}: an event about ${about.kind} ${about.namespace ? `${about.namespace}/` : ''}${about.name}, ` +
        'which is neither the handled object nor one of its children',
    );
  }
  return placed;
}

/**
 * The handlers with the namespaces they may see set from the scope: the pin's narrowing, or none. A
 * service does not choose its own (the gateway's filters check them, with no call to correct them).
 * The gateway's own namespace, when it has one, is left out of every handler's, scoped or not: no
 * watch, timer, daemon or admission review of its objects reaches a service.
 */
export function narrowedToScope(
  handlers: readonly HandlerSpec[],
  scope: ServiceScope | undefined,
  ownNamespace?: string,
): HandlerSpec[] {
  const namespaces = withoutOwnNamespace(scope?.namespaces, ownNamespace);
  return handlers.map((handler) => {
    const { namespaces: _declared, ...filters } = handler.filters ?? {};
    const narrowed = namespaces ? { ...filters, namespaces } : filters;
    return Object.keys(narrowed).length > 0 || handler.filters ? { ...handler, filters: narrowed } : handler;
  });
}

/** Namespace patterns (a handler's filter) with the gateway's own namespace left out; as given when it has none. */
export function withoutOwnNamespace(
  namespaces: string[] | undefined,
  own: string | undefined,
): string[] | undefined {
  return own === undefined ? namespaces : [...(namespaces ?? []), `!${own}`];
}
