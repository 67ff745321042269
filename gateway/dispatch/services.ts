/**
 * The function services a gateway serves, each at its home endpoint (a `--functions` URL, or a fetch
 * handler in this process) or, while a dev session redirects it, at a laptop's URL. The gateway is
 * told whenever the service that answers for a name changes: another manifest after a redeploy (found
 * by reading the manifests again), or another endpoint.
 */
import type { Logger } from '../logging.ts';
import type { Settings } from '../settings.ts';
import { jitter, sleep } from '../timing.ts';
import { FunctionService } from './function-service.ts';
import { type FetchHandler, httpTransport, inProcessTransport, type Transport } from './transport.ts';

/** A function service over HTTP, by its name (pinned: the audience it is called with) and its base URL. */
export interface FunctionEndpoint {
  name: string;
  url: string;
}

export interface FunctionServicesOptions {
  secret: Uint8Array;
  settings: Settings['calls'];
  logger: Logger;
  /** The service that answers for a name is now `next`: rebind its handlers (the calls under way finish). */
  onChange(previous: FunctionService, next: FunctionService): Promise<void>;
}

interface Slot {
  home: FunctionService;
  current: FunctionService;
  /** Where the calls go instead of home, while a dev session lasts. */
  away?: { url: string; revision: string; transport: Transport };
}

const LOOPBACK = /^(localhost|127\.\d+\.\d+\.\d+|\[::1\])$/;

export class FunctionServices {
  readonly #options: FunctionServicesOptions;
  readonly #slots: Slot[] = [];
  /** Changes one at a time, in the order asked: a redirect, its end and a re-read never interleave. */
  #queue: Promise<unknown> = Promise.resolve();

  constructor(options: FunctionServicesOptions) {
    this.#options = options;
  }

  /** Connects to every endpoint, waiting for those not reachable yet (until `signal` aborts). */
  async connect(
    endpoints: ReadonlyArray<FunctionEndpoint | FetchHandler>,
    signal: AbortSignal,
  ): Promise<void> {
    for (const endpoint of endpoints) if ('url' in endpoint) this.#checkScheme(endpoint.url);
    const services = await Promise.all(
      endpoints.map((endpoint) =>
        'url' in endpoint
          ? this.#connectWithRetry(this.#transport(endpoint.url), endpoint.name, signal)
          : this.#connectWithRetry(inProcessTransport(endpoint), undefined, signal),
      ),
    );
    for (const service of services) this.#slots.push({ home: service, current: service });
  }

  /** The services that answer now, one per name. */
  get current(): FunctionService[] {
    return this.#slots.map((slot) => slot.current);
  }

  /**
   * Sends the calls of the service named `name` to `url` (another instance of it, a laptop's), or
   * home again when `url` is undefined. A new `revision` at the same URL reads its manifest again.
   * Resolves false when `url` does not answer as that service: the calls stay where they were.
   */
  redirect(name: string, to: { url: string; revision: string } | undefined): Promise<boolean> {
    return this.#serially(async () => {
      const slot = this.#slots.find((candidate) => candidate.home.name === name);
      const { logger } = this.#options;
      if (!slot) {
        logger.warning(
          `a dev session names the function service "${name}", which this gateway does not serve`,
        );
        return false;
      }
      if (!to) {
        if (!slot.away) return true;
        const away = slot.away;
        slot.away = undefined;
        logger.info(`calls of "${name}" go to ${slot.home.url} again`);
        // Home as it is now: it may have been redeployed meanwhile.
        slot.home = await slot.home.reread().catch(() => slot.home);
        await this.#change(slot, slot.home);
        await away.transport.close(); // waits for the calls under way
        return true;
      }
      if (slot.away?.url === to.url && slot.away.revision === to.revision) return true;
      try {
        this.#checkScheme(to.url);
      } catch (error) {
        logger.warning(`a dev session for "${name}" is not redirected: ${describe(error)}`);
        return false;
      }
      const transport = this.#transport(to.url);
      let next: FunctionService;
      try {
        next = await FunctionService.connect({
          transport,
          name,
          secret: this.#options.secret,
          timeoutMs: this.#options.settings.timeoutMs,
        });
      } catch (error) {
        await transport.close();
        logger.warning(`a dev session for "${name}" is not redirected: ${describe(error)}`);
        return false;
      }
      const previous = slot.away;
      slot.away = { ...to, transport };
      if (previous?.url !== to.url) logger.info(`calls of "${name}" go to ${to.url} (a dev session)`);
      await this.#change(slot, next);
      if (previous && previous.transport !== transport) await previous.transport.close();
      return true;
    });
  }

  /** Reads every service's manifest again; a service redeployed with other handlers is rebound. */
  refresh(): Promise<void> {
    return this.#serially(async () => {
      for (const slot of this.#slots) {
        try {
          const next = await slot.current.reread();
          if (next !== slot.current) {
            this.#options.logger.info(`function service "${next.name}" at ${next.url} changed its handlers`);
            if (!slot.away) slot.home = next;
            await this.#change(slot, next);
          }
        } catch (error) {
          // Unreachable for now: its calls fail and are retried; the next refresh looks again.
          this.#options.logger.debug(`re-reading "${slot.current.name}" failed: ${describe(error)}`);
        }
      }
    });
  }

  async close(): Promise<void> {
    await this.#queue;
    await Promise.all(
      this.#slots.flatMap((slot) => [slot.home.close(), ...(slot.away ? [slot.away.transport.close()] : [])]),
    );
  }

  #transport(url: string): Transport {
    const { ca, concurrencyPerService } = this.#options.settings;
    return httpTransport(url, ca, concurrencyPerService);
  }

  /** HTTPS, or plain HTTP on this host (no network crossed), or plain HTTP where it was allowed. */
  #checkScheme(url: string): void {
    const { protocol, hostname } = new URL(url);
    if (protocol === 'https:' || this.#options.settings.plainHttp) return;
    if (protocol === 'http:' && LOOPBACK.test(hostname)) return;
    throw new Error(
      `${url}: function services are called over HTTPS, or plain HTTP on this host; to call one over ` +
        'plain HTTP across a network you trust, allow it (--allow-plain-http, settings.calls.plainHttp)',
    );
  }

  async #change(slot: Slot, next: FunctionService): Promise<void> {
    const previous = slot.current;
    if (previous === next) return;
    slot.current = next;
    await this.#options.onChange(previous, next);
  }

  #serially<T>(step: () => Promise<T>): Promise<T> {
    const result = this.#queue.then(step);
    this.#queue = result.catch(() => {});
    return result;
  }

  async #connectWithRetry(
    transport: Transport,
    name: string | undefined,
    signal: AbortSignal,
  ): Promise<FunctionService> {
    const { secret, settings, logger } = this.#options;
    for (let delay = 250; ; delay = Math.min(delay * 2, 10_000)) {
      try {
        const service = await FunctionService.connect({
          transport,
          name,
          secret,
          timeoutMs: settings.timeoutMs,
        });
        const ids = service.manifest.handlers.map((handler) => handler.id).join(', ');
        logger.info(`function service "${service.name}" at ${service.url}: handlers ${ids || '(none)'}`);
        if (service.unknownKinds.length > 0) {
          logger.warning(
            `"${service.name}" declares handler kinds this gateway does not know: ${service.unknownKinds.join(', ')}`,
          );
        }
        return service;
      } catch (error) {
        if (signal.aborted) throw error;
        logger.warning(`function service ${transport.url} is not reachable yet: ${describe(error)}`);
        await sleep(jitter(delay), signal);
      }
    }
  }
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
