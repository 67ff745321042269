/**
 * The scope check of the function services, as the gateway holds them to what they may reach
 * (dispatch/scope.ts): a service whose manifest names a resource beyond its scope is refused as a
 * whole when it connects, before any of its handlers is served; every answer is held to its scope
 * call by call, with the kinds it names resolved by discovery.
 *
 * Discovery needs the cluster client. A gateway that has one from the start (a kubeconfig) checks
 * manifests as services connect; one that logs in through a service has none until then, so its
 * services are looked at handler by handler as they are bound instead (binding.ts), and answers are
 * resolved once `discover` has given it discovery, which is before any object is watched.
 */

import type { KubernetesObject } from '../../protocol/index.ts';
import type { FunctionService } from '../dispatch/function-service.ts';
import { type AnswerGuard, ScopeError } from '../dispatch/scope.ts';
import type { Identity } from '../identity.ts';
import type { KubeClient, ServiceAccountName } from '../kube/client.ts';
import { type DiscoveredResource, type DiscoveryCache, kindSelector, objectPath } from '../kube/discovery.ts';
import { ignoreNotFound } from '../kube/errors.ts';
import { firstOutsideScope } from './binding.ts';

export class ScopeCheck implements AnswerGuard {
  readonly identity: Identity;
  readonly ownNamespace: string | undefined;
  /** Discovery at the start, where there is a cluster client then: manifests are checked with it. */
  readonly #atStart: DiscoveryCache | undefined;
  #discovery: DiscoveryCache | undefined;
  #client: KubeClient | undefined;

  constructor(identity: Identity, discovery: DiscoveryCache | undefined, ownNamespace?: string) {
    this.identity = identity;
    this.ownNamespace = ownNamespace;
    this.#atStart = discovery;
    this.#discovery = discovery;
  }

  /**
   * The gateway has its cluster client now (it logged in): answers are resolved with its discovery,
   * and the children they name read with it (or with its view as the service's account, --impersonate).
   */
  discover(discovery: DiscoveryCache, client: KubeClient): void {
    this.#discovery ??= discovery;
    this.#client = client;
  }

  /**
   * Throws why a service just connected may not be served: a handler whose id is the gateway's own key
   * in the status (its results would land on the gateway's record), or one beyond its scope.
   */
  async vet(service: Pick<FunctionService, 'name' | 'scope' | 'manifest'>): Promise<void> {
    const { statusKey } = this.identity;
    const own = service.manifest.handlers.find((handler) => handler.id === statusKey);
    if (own) {
      throw new ScopeError(
        `handler "${own.id}" of "${service.name}" has the id of the gateway's own record (status.${statusKey}), ` +
          'which its results would overwrite: the service is not served',
      );
    }
    const refused = this.#atStart && firstOutsideScope(service, await this.#atStart.fresh());
    if (refused) throw new ScopeError(`${refused}: the service is not served`);
  }

  async resourceOf(apiVersion: string, kind: string): Promise<DiscoveredResource> {
    // Asked only about objects, which come once the watches (and so discovery) are up.
    if (!this.#discovery) throw new Error('the gateway has no cluster client yet to resolve kinds with');
    return this.#discovery.resolve(kindSelector(apiVersion, kind));
  }

  async current(
    resource: DiscoveredResource,
    namespace: string,
    name: string,
    account?: ServiceAccountName,
  ): Promise<KubernetesObject | undefined> {
    if (!this.#client) throw new Error('the gateway has no cluster client yet to read children with');
    const client = account ? this.#client.impersonating(account) : this.#client;
    return ignoreNotFound(client.get<KubernetesObject>(objectPath(resource, name, namespace)));
  }
}
