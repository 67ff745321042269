/**
 * The function services the gateway refuses, and why: a manifest it cannot take (malformed, or beyond
 * the pin), or webhooks the apiserver would not configure. A service refused is that service alone:
 * the gateway serves the others, says which it refuses (log, `causeway_function_service_refused`,
 * the readiness body, a FunctionService's status), and takes it up once it is fixed.
 */
import { ScopeError } from './scope.ts';
import { ProtocolError } from './validation.ts';

/**
 * Whether `error` refuses a service as it is deployed (a manifest malformed or beyond its pin, a
 * health answer not of the service it should be), not an outage: waiting alone would not mend it.
 */
export function isRefusal(error: unknown): boolean {
  return error instanceof ScopeError || error instanceof ProtocolError;
}

/** What of a service was refused: its manifest (it is not served), or its webhooks (its admission is not). */
export type RefusalCause = 'manifest' | 'webhooks';

export class Refusals {
  /** By service, why each cause refuses it. */
  readonly #refused = new Map<string, Map<RefusalCause, string>>();
  /** Every service refused once: the gauge reads 0 for those served since. */
  readonly #seen = new Set<string>();
  readonly #listeners = new Set<(service: string) => void>();

  /** Refuses `service` for `cause`; says whether that is news (another reason, or refused now). */
  refuse(service: string, cause: RefusalCause, why: string): boolean {
    const causes = this.#refused.get(service) ?? new Map<RefusalCause, string>();
    if (causes.get(cause) === why) return false;
    causes.set(cause, why);
    this.#refused.set(service, causes);
    this.#seen.add(service);
    this.#tell(service);
    return true;
  }

  /** `cause` no longer refuses `service`; says whether it did. */
  clear(service: string, cause: RefusalCause): boolean {
    const causes = this.#refused.get(service);
    if (!causes?.delete(cause)) return false;
    if (causes.size === 0) this.#refused.delete(service);
    this.#tell(service);
    return true;
  }

  /** `service` is no longer the gateway's (removed): neither refused nor read by the gauge any more. */
  forget(service: string): void {
    const refused = this.#refused.delete(service);
    this.#seen.delete(service);
    if (refused) this.#tell(service);
  }

  /** Why `service` is refused now, its causes together; undefined while it is not. */
  why(service: string): string | undefined {
    const causes = this.#refused.get(service);
    return causes && [...causes.values()].join('; ');
  }

  /** Why each service refused now is, by name. */
  all(): Record<string, string> {
    return Object.fromEntries([...this.#refused.keys()].map((service) => [service, this.why(service) ?? '']));
  }

  /** Each service refused once, and whether it is now: the gauge's readings. */
  *readings(): Iterable<[service: string, refused: boolean]> {
    for (const service of this.#seen) yield [service, this.#refused.has(service)];
  }

  /** Calls `listener` with a service's name when whether (or why) it is refused changes; returns how to stop. */
  onChange(listener: (service: string) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #tell(service: string): void {
    for (const listener of this.#listeners) listener(service);
  }
}
