/**
 * Where the gateway's admission webhooks live: made when a service first has admission handlers
 * (until then no webhook server runs), and the place the gateway's own finalizer webhook is decided.
 */
import { type HandlerSpec, isAdmissionKind } from '../../protocol/index.ts';
import type { FunctionService } from '../dispatch/function-service.ts';
import { type DiscoveredResource, resourceKey } from '../kube/discovery.ts';
import type { Manager } from '../manager/manager.ts';
import { needsFinalizer } from '../reactor/finalizers.ts';
import { candidatesOf, type ServedResource } from '../reactor/model.ts';
import { Admission, type AdmissionOptions } from './admission.ts';

/** A handler of a service, to be served. */
interface Handled {
  service: FunctionService;
  handler: HandlerSpec;
}

export class AdmissionHost {
  readonly #options: AdmissionOptions;
  readonly #manager: Manager;
  /** Resources some admission handler reviews, by resourceKey. */
  readonly #reviewed = new Set<string>();
  #admission: Admission | undefined;

  constructor(options: AdmissionOptions, manager: Manager) {
    this.#options = options;
    this.#manager = manager;
  }

  /** Serves the admission handlers among `items` on `resource`; returns the others. */
  async serve<T extends Handled>(resource: DiscoveredResource, items: readonly T[]): Promise<T[]> {
    const reviewed = items.filter(({ handler }) => isAdmissionHandler(handler));
    if (reviewed.length === 0) return [...items];
    const admission = await this.#admitting();
    for (const service of new Set(reviewed.map((item) => item.service))) {
      const handlers = reviewed.filter((item) => item.service === service).map((item) => item.handler);
      admission.serve(service, handlers, resource);
    }
    this.#reviewed.add(resourceKey(resource));
    return items.filter(({ handler }) => !isAdmissionHandler(handler));
  }

  /**
   * Where the gateway reviews a resource that has delete handlers, its own webhook puts the finalizer on
   * at creation, which then costs no write of its own.
   */
  holdAtCreation(served: ServedResource): void {
    if (!this.#admission || !this.#reviewed.has(resourceKey(served.resource))) return;
    const deletes = served.bindings.some(({ handlers }) =>
      handlers.some((handler) => handler.kind === 'delete'),
    );
    if (!deletes) return;
    this.#admission.holdAtCreation(served.resource, (object) => needsFinalizer(object, candidatesOf(served)));
  }

  /** The service's webhooks answer until the next `sync`, when those its successor serves replace them. */
  retire(service: FunctionService): void {
    this.#admission?.retire(service);
  }

  /** Why the gateway cannot work, as far as admission goes: its webhook server, once it has one, does not serve. */
  faults(): string[] {
    return this.#admission?.serving === false ? ['the admission webhook server is not serving'] : [];
  }

  async sync(): Promise<void> {
    await this.#admission?.sync();
  }

  async #admitting(): Promise<Admission> {
    if (this.#admission) return this.#admission;
    this.#admission = new Admission(this.#options);
    await this.#manager.add('admission', this.#admission); // started now, or with the others at the start
    return this.#admission;
  }
}

export function isAdmissionHandler(handler: HandlerSpec): boolean {
  return isAdmissionKind(handler.kind);
}
