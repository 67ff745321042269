/**
 * `causeway dev`: an operator module on a laptop, reloaded on save. Either with a gateway of its own
 * (as `causeway run`), or, with a deployed gateway, as a dev session: the service's FunctionService
 * in the namespace (or, where none names it, a Lease there, for a gateway deployed with
 * `--dev-sessions <namespace>`) sends the deployed service's calls to this laptop while it is renewed.
 */
import { type FSWatcher, mkdtempSync, renameSync, rmSync, watch, writeFileSync } from 'node:fs';
import { hostname, tmpdir, userInfo } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { encodeSecret, type KubernetesObject, PATHS } from '../../../../protocol/index.ts';
import type { Reach } from '../../../../webhooks/reach.ts';
import { type GatewayOptions, startGateway } from '../../../gateway.ts';
import { KubeClient } from '../../../kube/client.ts';
import { ignoreNotFound, isNotFound } from '../../../kube/errors.ts';
import type { Logger } from '../../../logging.ts';
import {
  type DevSession,
  devSessionLease,
  devSessionLeaseName,
  devSessionRefusal,
} from '../../../services/dev-sessions.ts';
import {
  DEV_SESSION_RENEWED,
  devSessionsAllowedBy,
  functionServicesPath,
  serviceNameOf,
} from '../../../services/function-service-objects.ts';
import { PUBLIC_KEYS_FILE } from '../../../services/signing-keys.ts';
import { DevService } from './dev-service.ts';

export interface DevOptions {
  module: string;
  /**
   * What the module's service verifies calls with: a secret (the deployed gateway's in a session, any
   * otherwise), or the public keys a deployed gateway publishes in a ConfigMap, followed as they rotate.
   */
  verification: { secret: string } | { publicKeys: { namespace: string; name: string } };
  /** Extra arguments for the `causeway serve` that runs the module. */
  serveArgs: readonly string[];
  logger: Logger;
  /** Resolves when the session is to end (a signal). */
  until: Promise<void>;
  /** A session with a deployed gateway; without it, a gateway of its own with these options. */
  session?: SessionOptions;
  gateway: Omit<GatewayOptions, 'functions' | 'secret'>;
}

export interface SessionOptions {
  namespace: string;
  durationSeconds: number;
  /** How the deployed gateway reaches this laptop. */
  reach: Reach;
  annotationPrefix: string;
  kubeconfig: KubeConfig;
}

export async function dev(options: DevOptions): Promise<void> {
  const { module, verification, logger } = options;
  let serveArgs = options.serveArgs;
  let keys: PublicKeysCopy | undefined;
  if ('publicKeys' in verification) {
    if (!options.session) throw new Error("the deployed gateway's public keys are for a dev session");
    keys = await PublicKeysCopy.start(
      await KubeClient.fromConfig(options.session.kubeconfig),
      verification.publicKeys,
      logger,
    );
    serveArgs = [...serveArgs, '--jwks-file', keys.file];
  }
  const secret = 'secret' in verification ? verification.secret : undefined;
  const service = await DevService.start({ module, secret, serveArgs, logger });
  try {
    const name = await serviceName(service.url);
    if (options.session) {
      await asSession(service, name, options.session, options);
    } else {
      const gateway = await startGateway({
        ...options.gateway,
        // The module and this gateway run on one machine for one developer: its declared scope is the pin.
        functions: [{ name, url: service.url, scope: 'declared' }],
        secret: encodeSecret(secret as string),
      });
      logger.info(`dev: serving "${name}" from ${module}, reloaded on save`);
      const stopWatching = watchSources(module, async () => {
        if (await service.reload()) {
          await gateway.refresh();
          logger.info('dev: reloaded');
        }
      });
      await options.until;
      stopWatching();
      await gateway.stop();
    }
  } finally {
    await service.close();
    keys?.stop();
  }
}

/**
 * The deployed gateway's public keys, copied from their ConfigMap into a file the module's service
 * follows (`serve --jwks-file`), and copied again every minute: a rotated key is published minutes
 * before it signs. The laptop holds nothing that signs.
 */
class PublicKeysCopy {
  readonly file: string;
  readonly #timer: NodeJS.Timeout;

  private constructor(file: string, timer: NodeJS.Timeout) {
    this.file = file;
    this.#timer = timer;
  }

  static async start(
    client: KubeClient,
    location: { namespace: string; name: string },
    logger: Logger,
  ): Promise<PublicKeysCopy> {
    const file = join(mkdtempSync(join(tmpdir(), 'causeway-dev-')), PUBLIC_KEYS_FILE);
    const where = `ConfigMap ${location.namespace}/${location.name}`;
    const copy = async () => {
      const read = await client.get<{ data?: Record<string, string> }>(
        `/api/v1/namespaces/${location.namespace}/configmaps/${location.name}`,
      );
      const text = read.data?.[PUBLIC_KEYS_FILE];
      if (!text)
        throw new Error(`${where} has no "${PUBLIC_KEYS_FILE}": is it the gateway's --signing-keys?`);
      writeFileSync(`${file}.new`, text);
      renameSync(`${file}.new`, file); // whole, never half-written
    };
    await copy();
    const timer = setInterval(
      () =>
        void copy().catch((error) =>
          logger.warning(`dev: copying the gateway's public keys failed: ${error.message}`),
        ),
      60_000,
    );
    return new PublicKeysCopy(file, timer);
  }

  stop(): void {
    clearInterval(this.#timer);
    rmSync(dirname(this.file), { recursive: true, force: true });
  }
}

/** Holds the session while `until` is pending; a reload changes its revision. */
async function asSession(service: DevService, name: string, session: SessionOptions, options: DevOptions) {
  const { logger, module } = options;
  const way = await session.reach({ host: '127.0.0.1', port: service.port, scheme: 'http' });
  try {
    if (!('url' in way.clientConfig)) throw new Error('a dev session needs a URL the gateway can reach');
    const url = way.clientConfig.url;
    const client = await KubeClient.fromConfig(session.kubeconfig);
    const holder = await sessionHolder(client, name, session);
    const describe = (revision: string): DevSession => ({
      service: name,
      url,
      revision,
      holder: `${userInfo().username}@${hostname()}`,
      durationSeconds: session.durationSeconds,
    });
    let revision = String(Date.now());
    const refusal = holder.refusal?.(describe(revision));
    if (refusal) logger.warning(`dev: the gateway will ignore this session: ${refusal}`);
    await holder.renew(describe(revision));
    logger.info(
      `dev: the calls of "${name}" come to ${url} from the gateway watching ${session.namespace} ` +
        `(${holder.where}); reloaded on save`,
    );
    // Later renewals say when they fail and try again: the session outlives one missed renewal.
    const renewAgain = () =>
      holder
        .renew(describe(revision))
        .catch((error) => logger.warning(`dev: renewing the session failed: ${(error as Error).message}`));
    const renewing = setInterval(() => void renewAgain(), (session.durationSeconds * 1000) / 3);
    const stopWatching = watchSources(module, async () => {
      if (!(await service.reload())) return;
      revision = String(Date.now());
      await renewAgain();
      logger.info('dev: reloaded');
    });
    await options.until;
    stopWatching();
    clearInterval(renewing);
    // The calls go home at once, rather than when the session would expire.
    await holder.end().catch((error) => {
      if (!isNotFound(error)) logger.warning(`dev: ending the session failed: ${error.message}`);
    });
  } finally {
    await way.close();
  }
}

/** Where a session is held: the field of the service's FunctionService in the namespace, or else a Lease there. */
interface SessionHolder {
  where: string;
  /** Why the gateway will not follow the session, where the holder says what its service allows. */
  refusal?(session: DevSession): string | undefined;
  renew(session: DevSession): Promise<unknown>;
  end(): Promise<unknown>;
}

async function sessionHolder(
  client: KubeClient,
  service: string,
  session: SessionOptions,
): Promise<SessionHolder> {
  const objects = functionServicesPath(session.namespace);
  // Not found: the CustomResourceDefinition is not installed, so no FunctionService names it.
  const listed = await ignoreNotFound(client.get<{ items: KubernetesObject[] }>(objects));
  const object = listed?.items.find((candidate) => serviceNameOf(candidate) === service);
  if (object) {
    const path = `${objects}/${encodeURIComponent(object.metadata.name)}`;
    // The same spec again changes no generation: only the annotation tells a renewal.
    const write = (devSession: Omit<DevSession, 'service'> | null, renewed: string | null) =>
      client.patch(path, 'merge', {
        metadata: { annotations: { [DEV_SESSION_RENEWED]: renewed } },
        spec: { devSession },
      });
    return {
      where: `FunctionService ${session.namespace}/${object.metadata.name}`,
      refusal: (devSession) => devSessionRefusal(devSession, devSessionsAllowedBy(object)),
      renew: ({ service: _, ...devSession }) => write(devSession, new Date().toISOString()),
      end: () => write(null, null),
    };
  }
  const path = `/apis/coordination.k8s.io/v1/namespaces/${session.namespace}/leases/${devSessionLeaseName(service)}`;
  return {
    where: `Lease ${session.namespace}/${devSessionLeaseName(service)}`,
    renew: (devSession) =>
      client.patch(path, 'apply', devSessionLease(devSession, session.annotationPrefix, new Date()), {
        fieldManager: 'causeway-dev',
        force: true,
      }),
    end: () => client.request(path, { method: 'DELETE' }),
  };
}

async function serviceName(url: string): Promise<string> {
  const health = (await (await fetch(`${url}${PATHS.health}`)).json()) as { name?: unknown };
  if (typeof health.name !== 'string') throw new Error(`${url}${PATHS.health} names no service`);
  return health.name;
}

/**
 * Calls `onChange` after files in the module's folder change (a burst of saves counts once, and a
 * change during a reload brings one more). node_modules and dot-folders are not watched.
 */
function watchSources(module: string, onChange: () => Promise<void>): () => void {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let again = false;
  const run = () => {
    if (running) {
      again = true;
      return;
    }
    running = onChange().finally(() => {
      running = undefined;
      if (again) {
        again = false;
        run();
      }
    });
  };
  const watcher: FSWatcher = watch(dirname(resolve(module)), { recursive: true }, (_event, file) => {
    if (file && /(^|\/)(node_modules|\.[^/]+)(\/|$)/.test(file)) return;
    clearTimeout(timer);
    timer = setTimeout(run, 100);
  });
  return () => {
    clearTimeout(timer);
    watcher.close();
  };
}
