/**
 * What a gateway is started with, and what the started gateway offers: the public shape of
 * `startGateway` (gateway.ts), read by the modules that assemble it.
 */
import type { KubeConfig } from '@kubernetes/client-node';
import type { FunctionEndpoint } from './dispatch/services.ts';
import type { FetchHandler } from './dispatch/transport.ts';
import type { Identity } from './identity.ts';
import type { Logger } from './logging.ts';
import type { PeeringOptions } from './peering/peering.ts';
import type { RbacCheck } from './rbac/at-start.ts';
import type { SettingsPatch } from './settings.ts';

export interface GatewayOptions {
  /**
   * Function services: by name and base URL (the name pinned: a service that answers as another is
   * refused), or fetch handlers to call in this process (`causeway run`).
   */
  functions: ReadonlyArray<FunctionEndpoint | FetchHandler>;
  /**
   * A secret (≥ 32 bytes) shared with the function services that have none of their own, for HS256.
   * Ignored where the gateway has signing keys (`settings.signing.keys`), which it signs with instead.
   */
  secret?: Uint8Array;
  /** Namespaces to serve: names, globs (`team-*`), negations (`!kube-*`); undefined serves all of them. */
  namespaces?: readonly string[];
  /**
   * The namespace the gateway runs in (its pod's), which it serves to no function service: no handler
   * sees its objects, no child or event of an answer goes there, and its webhook configurations leave
   * it out. Its Secrets, keys and account are the gateway's own. Undefined: every namespace served is
   * served to the services (outside a pod, or with --serve-own-namespace).
   */
  ownNamespace?: string;
  /** Defaults to the usual kubeconfig lookup: $KUBECONFIG, ~/.kube/config, in-cluster. */
  kubeconfig?: KubeConfig;
  identity?: Partial<Identity>;
  logger?: Logger;
  /** Tunables by section (see Settings); what is not given keeps its default. */
  settings?: SettingsPatch;
  /**
   * Let `causeway dev` sessions send a service's calls to a laptop: the namespace whose Leases name
   * them (see services/dev-sessions.ts). Only for a service that allows them (its FunctionService's
   * `spec.devSessions`, or `FunctionEndpoint.devSessions`), to a URL it allows.
   */
  devSessions?: string;
  /**
   * Also serve the function services that FunctionService objects (causeway.dev/v1alpha1) in this
   * namespace name, as they are added, changed and removed, and follow the dev sessions their
   * `devSession` fields hold where their `spec.devSessions` allows. Their URLs may not name a
   * loopback or link-local host unless `settings.calls.allowLoopback`.
   */
  functionServices?: string;
  /**
   * Serve a liveness endpoint at this URL (e.g. `http://0.0.0.0:8080/healthz`): 200 with the probe
   * handlers' results while the gateway can work, 500 with the reasons otherwise; and readiness at
   * `/readyz` on its host and port: 200 once it serves, 503 with the reasons until then and while it
   * stops. A function service down fails neither: both report it (health/endpoint.ts).
   */
  liveness?: string;
  /**
   * Log in to the Kubernetes API through this function service's login handler, instead of with a
   * kubeconfig (services/login.ts). Until then the gateway has no cluster access, so the calls to the
   * service are signed without one: with a secret shared with it, or unsigned in this process.
   */
  loginFrom?: string;
  /**
   * Coordinate with the other gateways of this identity through Leases in a namespace: one of them
   * (the highest priority's oldest) leads and runs the watches, reactors, timers and daemons; the
   * others stand by, serving admission and health. Undefined: this gateway is alone, and leads.
   */
  peering?: PeeringOptions;
  /**
   * Check at start that the cluster grants the gateway the RBAC its flags and services need
   * (rbac/at-start.ts): refuse to start, or warn, when it does not. Checked once its services are
   * read (with its signing keys and their certificates, made first), before anything is watched or
   * any other write. Undefined: not checked.
   */
  rbacCheck?: RbacCheck;
  /**
   * Write each function service's children and events (and so any change to an object other than the
   * one handled) as a ServiceAccount of that service, so that the apiserver's RBAC and admission check
   * them too: the account its scope names (`impersonate`), else one of its name in its FunctionService's
   * namespace, else in this one (the gateway's own). The handled object's patch and status stay the
   * gateway's. A write the account may not make fails with the apiserver's reason; it is never made
   * with the gateway's rights instead. Undefined: every write is the gateway's.
   */
  impersonate?: string;
  /**
   * Serve Prometheus metrics at `/metrics` on this address (`HOST:PORT`, `:9090` for every address,
   * port 0 for any free one), on every replica (docs/observability.md). Undefined: none are kept.
   */
  metrics?: string;
}

export interface Gateway {
  /** Resolves once every watched resource has been listed and its objects queued. */
  readonly synced: Promise<void>;
  /** The liveness endpoint's URL, its port known, when there is one. */
  readonly liveness: string | undefined;
  /** The readiness endpoint's URL, beside the liveness endpoint's, when there is one. */
  readonly readiness: string | undefined;
  /** The metrics endpoint's URL, its port known, when there is one. */
  readonly metrics: string | undefined;
  /** Reads the function services' manifests again now (as it does every `calls.manifestRefreshMs`). */
  refresh(): Promise<void>;
  /**
   * Whether this gateway handles objects now (its pipelines run): always when alone; with peering,
   * while it leads; with sharding, while it holds its share. As its peers and it agree.
   */
  readonly handling: boolean;
  stop(): Promise<void>;
}
