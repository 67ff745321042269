/**
 * Whom a write that a function service asked for (a child to apply, an event) is made as, under
 * --impersonate: the service's ServiceAccount, carried on the object itself from the service's answer
 * to the API call. Under a symbol: it survives the copies a cycle makes on the way (`{ ...object }`)
 * and is never sent (JSON leaves symbols out).
 */
import type { KubeClient, ServiceAccountName } from './client.ts';

const WRITER = Symbol('written as');

/** The value, marked to be written as `account`. */
export function writtenAs<T extends object>(value: T, account: ServiceAccountName): T {
  return { ...value, [WRITER]: account };
}

/** The account the value is to be written as; undefined: as the gateway. */
export function writerOf(value: object): ServiceAccountName | undefined {
  return (value as { [WRITER]?: ServiceAccountName })[WRITER];
}

/** The client to write the value with: a view impersonating its account, or the gateway's own. */
export function clientFor(client: KubeClient, value: object): KubeClient {
  const writer = writerOf(value);
  return writer ? client.impersonating(writer) : client;
}
