import type { PROTOCOL } from './version.ts';

/**
 * Names a resource the way kubectl accepts it: `name` is a plural, singular, kind or short name,
 * or `plural.group`; `group` and `version` narrow it down. The gateway resolves it through API discovery.
 */
export interface ResourceSelector {
  group?: string;
  version?: string;
  name: string;
}

/** The causes a handler can be declared for. Later protocol revisions add kinds; gateways ignore kinds they do not know. */
export type HandlerKind = 'create';

export interface HandlerSpec {
  /** Unique within the service; the result is stored under `status.<id>`. */
  id: string;
  kind: HandlerKind;
  resource: ResourceSelector;
}

/** What a function service publishes at `PATHS.manifest`: everything the gateway needs to decide what to watch. */
export interface Manifest {
  protocol: typeof PROTOCOL;
  /** The service's name; also the audience every signed request to it must carry. */
  name: string;
  handlers: HandlerSpec[];
}

/** The unsigned health answer; it names the service so a gateway knows which audience to sign for. */
export interface Health {
  status: 'ok';
  protocol: typeof PROTOCOL;
  name: string;
}
