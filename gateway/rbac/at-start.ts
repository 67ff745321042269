/**
 * The gateway's check of its own rights at start (`--rbac-check`): the RBAC its flags and services
 * need, as `causeway rbac` computes it with the same flags (needed.ts), asked of the cluster
 * (granted.ts) before anything is watched; what is missing refuses the start, or only warns. Once:
 * the services that FunctionService objects add later are not checked.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { connectServices } from '../binding/sources.ts';
import type { FunctionService } from '../dispatch/function-service.ts';
import type { Signer } from '../dispatch/signer.ts';
import type { KubeClient } from '../kube/client.ts';
import { DiscoveryCache } from '../kube/discovery.ts';
import type { Logger } from '../logging.ts';
import { describePermission, type Permission, permissionsOf } from './check.ts';
import { type Checked, checkGranted } from './granted.ts';
import { type GatewayRbacFlags, gatewayRbac } from './needed.ts';

export const RBAC_CHECK_MODES = ['refuse', 'warn', 'off'] as const;
export type RbacCheckMode = (typeof RBAC_CHECK_MODES)[number];

/** How the gateway checks its rights at start: the flags `causeway rbac` would be given, and what a lack does. */
export interface RbacCheck {
  mode: Exclude<RbacCheckMode, 'off'>;
  flags: GatewayRbacFlags;
}

/**
 * The delays before checking again while permissions are missing: the apiserver's authorizer reads
 * RBAC from a cache, which may not have the rules applied just before the gateway started.
 */
export const RECHECK_DELAYS_MS: readonly number[] = [1_000, 2_000, 4_000];

/** What the gateway is at the check: connected to its services, before it watches or writes anything. */
export interface StartingGateway {
  /** Undefined while it is to log in through a service: it has no credentials to check yet. */
  client: KubeClient | undefined;
  services: readonly FunctionService[];
  /** Signs the manifest requests of the services of FunctionService objects, as the gateway will. */
  signer: Signer | undefined;
  /** The CA to trust for services over https that name none. */
  ca: string | undefined;
  /** The gateway's discovery: loaded once for the start's steps (this check among them), the pipelines then resolve with it. */
  discovery?: DiscoveryCache;
  logger: Logger;
}

/** Throws, listing what is missing, when the gateway lacks a permission it needs and `mode` refuses. */
export async function checkOwnRights(
  { mode, flags }: RbacCheck,
  gateway: StartingGateway,
  recheckDelaysMs: readonly number[] = RECHECK_DELAYS_MS,
): Promise<void> {
  const { client, logger } = gateway;
  if (!client) {
    logger.debug('its rights are not checked at start: it has no cluster credentials until it logs in');
    return;
  }
  const objectServices = await servicesOfObjects(flags, gateway, client);
  try {
    const services = [...gateway.services, ...objectServices];
    const discovery = await (gateway.discovery ?? new DiscoveryCache(client)).fresh();
    const { objects, unserved } = await gatewayRbac(client, flags, services, discovery, logger);
    // The gateway serves such a resource once its CustomResourceDefinition is installed: no refusal.
    for (const handler of unserved)
      logger.info(`${handler}, which the cluster does not serve yet: its rights on it are not checked`);
    await decideOnRights(
      mode,
      permissionsOf(objects, flags.request.account),
      (wanted) => checkGranted(client, wanted),
      {
        logger,
        recheckDelaysMs,
      },
    );
  } finally {
    await Promise.all(objectServices.map((service) => service.close()));
  }
}

/**
 * The services of the FunctionService objects served, read for their handlers as `causeway rbac`
 * reads them; none when one cannot be read (the gateway serves it once it is up), with a warning.
 */
async function servicesOfObjects(
  { request, impersonate }: GatewayRbacFlags,
  { signer, ca, logger }: StartingGateway,
  client: KubeClient,
): Promise<FunctionService[]> {
  if (request.functionServices === undefined) return [];
  try {
    return await connectServices(
      {
        sources: { functions: [], functionServices: request.functionServices },
        signer: async () => {
          if (!signer) throw new Error('the gateway has nothing to sign with');
          return signer;
        },
        ...(ca ? { ca } : {}),
        ...(impersonate === undefined ? {} : { impersonate }),
      },
      client,
    );
  } catch (error) {
    logger.warning(
      `the handlers of the FunctionService objects in ${request.functionServices} are not checked at start: ${error instanceof Error ? error.message : error}`,
    );
    return [];
  }
}

/**
 * Checks `wanted` (again after each delay while some are missing), then starts, warns or refuses as
 * `rightsVerdict` says. What is granted beyond `wanted` is no error: a debug line.
 */
export async function decideOnRights(
  mode: RbacCheck['mode'],
  wanted: readonly Permission[],
  check: (wanted: readonly Permission[]) => Promise<Checked>,
  { logger, recheckDelaysMs }: { logger: Logger; recheckDelaysMs: readonly number[] },
): Promise<void> {
  let checked = await check(wanted);
  for (const delayMs of recheckDelaysMs) {
    if (checked.missing.length === 0) break;
    logger.info(
      `${checked.missing.length} of ${wanted.length} permissions it needs are not granted, e.g. ${describePermission(checked.missing[0] as Permission)}: checking again in ${delayMs / 1000} s, as the cluster's authorizer may not have the newest RBAC yet`,
    );
    await sleep(delayMs);
    checked = await check(wanted);
  }
  if (checked.extra.length > 0)
    logger.debug(`granted beyond its needs: ${checked.extra.map(describePermission).join('; ')}`);
  const verdict = rightsVerdict(mode, checked.missing, wanted.length);
  if ('refusal' in verdict) throw new Error(verdict.refusal);
  if ('warning' in verdict) logger.warning(verdict.warning);
  else logger.debug(`granted all ${wanted.length} permissions it needs`);
}

/** What the gateway does about the permissions `missing` of the `needed` it needs: start, warn, or refuse. */
export function rightsVerdict(
  mode: RbacCheck['mode'],
  missing: readonly Permission[],
  needed: number,
): { start: true } | { warning: string } | { refusal: string } {
  if (missing.length === 0) return { start: true };
  const lacking = `the gateway is not granted ${missing.length} of the ${needed} permissions its flags and services need`;
  if (mode === 'warn')
    return {
      warning: `${lacking}, starting anyway (--rbac-check warn): ${missing.map(describePermission).join('; ')}`,
    };
  return {
    refusal: [
      `${lacking}:`,
      ...missing.map((permission) => `  missing: ${describePermission(permission)}`),
      '`causeway rbac` with the same flags (`causeway rbac <file>` for `causeway run <file>`), piped to `kubectl apply -f -`, grants them; --rbac-check warn starts anyway',
    ].join('\n'),
  };
}
