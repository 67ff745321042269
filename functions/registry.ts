import type { HandlerKind, HandlerSpec, Reason } from '../protocol/index.ts';
import type { Fields, Handler } from './context.ts';
import { type Resource, selectResource } from './resource.ts';

export interface HandlerOptions {
  /** Defaults to the function's name; the result is stored under `status.<id>`. */
  id?: string;
}

/** Each kind's options; a kind the protocol adds gets its own entry here and in KINDS. */
interface OptionsOf {
  create: HandlerOptions;
}

interface KindRules {
  /** The causes that make a handler of this kind due. */
  reasons: readonly Reason[];
  /** Checked at registration too, so that plain JavaScript cannot pass an option that would be ignored. */
  options: readonly string[];
}

/** `satisfies` keeps this table in step with the protocol's kinds: a missing or unknown kind fails to typecheck. */
const KINDS = {
  create: { reasons: ['create'], options: ['id'] },
} satisfies Record<HandlerKind, KindRules>;

/** `Spec` and `Status` type what a handler reads from the object; they are not checked at run time. */
export interface Register<Options> {
  <Spec extends object = Fields, Status extends object = Fields>(
    resource: Resource,
    handler: Handler<Spec, Status>,
  ): void;
  <Spec extends object = Fields, Status extends object = Fields>(
    resource: Resource,
    options: Options,
    handler: Handler<Spec, Status>,
  ): void;
}

export type On = { [Kind in HandlerKind]: Register<OptionsOf[Kind]> };

export interface Registered extends HandlerSpec {
  fn: Handler;
}

export interface Registry {
  on: On;
  /** By id, in registration order. */
  handlers: ReadonlyMap<string, Registered>;
}

export function createRegistry(): Registry {
  const handlers = new Map<string, Registered>();
  const register =
    (kind: HandlerKind) =>
    (resource: Resource, ...rest: [Handler] | [HandlerOptions, Handler]): void => {
      const [options, fn] = rest.length === 1 ? [{}, rest[0]] : rest;
      if (typeof fn !== 'function') throw new TypeError(`on.${kind}: the handler must be a function`);
      checkOptions(kind, options);
      const id = options.id ?? fn.name;
      if (!id) {
        throw new TypeError(
          `on.${kind}: an anonymous handler needs an id: pass { id: '...' } or use a named function`,
        );
      }
      if (/\s/.test(id)) throw new TypeError(`on.${kind}: handler id "${id}" must not contain whitespace`);
      if (handlers.has(id)) {
        throw new Error(
          `on.${kind}: handler id "${id}" is already registered; pass a distinct { id: '...' }`,
        );
      }
      handlers.set(id, { id, kind, resource: selectResource(resource), fn });
    };
  const on = Object.fromEntries(
    Object.keys(KINDS).map((kind) => [kind, register(kind as HandlerKind)]),
  ) as On;
  return { on, handlers };
}

export function handles(kind: HandlerKind, reason: Reason): boolean {
  return KINDS[kind].reasons.includes(reason);
}

function checkOptions(kind: HandlerKind, options: unknown): asserts options is HandlerOptions {
  if (typeof options !== 'object' || options === null) {
    throw new TypeError(`on.${kind}: options must be an object, got ${String(options)}`);
  }
  const known: readonly string[] = KINDS[kind].options;
  for (const name of Object.keys(options)) {
    if (!known.includes(name)) {
      throw new TypeError(`on.${kind}: unknown option "${name}"; known options: ${known.join(', ')}`);
    }
  }
  const { id } = options as HandlerOptions;
  if (id !== undefined && (typeof id !== 'string' || id === '')) {
    throw new TypeError(`on.${kind}: option "id" must be a non-empty string`);
  }
}
