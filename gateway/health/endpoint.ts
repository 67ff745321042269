/**
 * The gateway's health endpoint, at the --liveness URL (Kopf's --liveness), and beside it
 * `/readyz`. Liveness says whether the process can work: it answers at all (so its event loop turns),
 * it is not stopping, its webhook server serves when it has one, and the probe handlers succeed; 200
 * with the probes' results by id, 500 with the reasons otherwise. Readiness says whether it serves
 * yet: the watched resources' first lists are in and the webhook server serves; 200, or 503 with the
 * reasons (stopping too). A function service down or refused fails neither: both report it, since a
 * gateway restarted or taken out of service does not bring a service back, nor mend its manifest, and
 * the others are served meanwhile. The probes' results are kept for a
 * while (10 s, as Kopf does), so that frequent probing costs few calls.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { closeNow, listen, origin } from '../listening.ts';
import type { Logger } from '../logging.ts';
import type { Part } from '../manager/manager.ts';
import type { ProbeRound } from '../services/activities.ts';

export interface LivenessAddress {
  host: string;
  port: number;
  path: string;
}

/** Where readiness is answered, on the liveness endpoint's host and port. */
export const READINESS_PATH = '/readyz';

/**
 * Where to listen, from a URL such as `http://0.0.0.0:8080/healthz`: plain HTTP only, port 80 by
 * default, at any path but READINESS_PATH's.
 */
export function livenessAddress(url: string): LivenessAddress {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new Error(`the liveness endpoint must be a URL such as http://0.0.0.0:8080/healthz, got "${url}"`);
  }
  if (parsed.protocol !== 'http:') {
    throw new Error(`the liveness endpoint is served over plain HTTP (http://...), got "${url}"`);
  }
  if (parsed.pathname === READINESS_PATH) {
    throw new Error(`the liveness endpoint cannot be at ${READINESS_PATH}, where readiness is answered`);
  }
  return {
    host: parsed.hostname.replace(/^\[|\]$/g, ''),
    port: parsed.port === '' ? 80 : Number(parsed.port),
    path: parsed.pathname,
  };
}

export interface Health {
  status: 200 | 500 | 503;
  body: Record<string, unknown>;
}

/** What the gateway is now, asked at each request. */
export interface Condition {
  stopping: boolean;
  /** Why each function service that is down (its circuit breaker open) is, by name. */
  down: Record<string, string>;
  /** Why each function service refused (its manifest, its webhooks) is, by name. */
  refused: Record<string, string>;
  /** Why the gateway cannot work, besides stopping and its probes: empty while it can. */
  faults: string[];
  /** Why it is not ready yet: empty once it is. */
  notReady: string[];
}

/**
 * The liveness answer: the probes' results by id, as shownResult shows them but an operator's in this
 * process (a probe id that two services share, by `<service>/<id>`), or 500 with every reason the gateway cannot work. A function service down is
 * reported, never a reason: restarting the gateway does not bring a service back. Pure.
 */
export function healthOf(rounds: readonly ProbeRound[], condition: Omit<Condition, 'notReady'>): Health {
  const reasons = [
    ...stoppingReason(condition.stopping),
    ...condition.faults,
    ...rounds.flatMap((round) => round.failures),
  ];
  const down = servicesReport(condition);
  if (reasons.length > 0) return { status: 500, body: { error: reasons.join('; '), ...down } };
  const counts = new Map<string, number>();
  for (const id of rounds.flatMap((round) => Object.keys(round.results))) {
    counts.set(id, (counts.get(id) ?? 0) + 1);
  }
  const body: Record<string, unknown> = {};
  for (const { service, results, inProcess } of rounds) {
    for (const [id, result] of Object.entries(results)) {
      body[(counts.get(id) ?? 0) > 1 ? `${service}/${id}` : id] = inProcess ? result : shownResult(result);
    }
  }
  return { status: 200, body: { ...body, ...down } };
}

/**
 * A probe's result as the endpoint shows it: a number, a boolean or null as it is; any other (text, or
 * what holds some), which the service chose and whoever reads the endpoint might take for the
 * gateway's, as `"ok"`: it succeeded.
 */
export function shownResult(result: unknown): unknown {
  const plain = result === null || typeof result === 'boolean' || Number.isFinite(result);
  return plain ? result : 'ok';
}

/**
 * The readiness answer: 200 once nothing keeps the gateway from serving, 503 with every reason
 * otherwise, stopping included. A function service down is reported, as by healthOf. Pure.
 */
export function readinessOf(condition: Omit<Condition, 'faults'>): Health {
  const reasons = [...stoppingReason(condition.stopping), ...condition.notReady];
  const down = servicesReport(condition);
  if (reasons.length > 0) return { status: 503, body: { error: reasons.join('; '), ...down } };
  return { status: 200, body: { ready: true, ...down } };
}

function stoppingReason(stopping: boolean): string[] {
  return stopping ? ['the gateway is stopping'] : [];
}

/** The services down, and those refused, each under a key of their own in either answer; nothing while none is. */
function servicesReport({ down, refused }: Pick<Condition, 'down' | 'refused'>): {
  functionServicesDown?: Record<string, string>;
  functionServicesRefused?: Record<string, string>;
} {
  return {
    ...(Object.keys(down).length > 0 ? { functionServicesDown: down } : {}),
    ...(Object.keys(refused).length > 0 ? { functionServicesRefused: refused } : {}),
  };
}

/** Keeps the probes' last round for `maxAgeMs`; one round at a time, however many ask meanwhile. */
export class ProbeCache {
  readonly #run: () => Promise<ProbeRound[]>;
  readonly #maxAgeMs: number;
  readonly #now: () => number;
  #last: { at: number; rounds: Promise<ProbeRound[]> } | undefined;

  constructor(run: () => Promise<ProbeRound[]>, maxAgeMs: number, now: () => number = Date.now) {
    this.#run = run;
    this.#maxAgeMs = maxAgeMs;
    this.#now = now;
  }

  get(): Promise<ProbeRound[]> {
    const now = this.#now();
    if (!this.#last || now - this.#last.at >= this.#maxAgeMs) {
      const rounds = this.#run();
      this.#last = { at: now, rounds };
      // A round that could not be had at all is not kept: the next request tries again.
      rounds.catch(() => {
        if (this.#last?.rounds === rounds) this.#last = undefined;
      });
    }
    return this.#last.rounds;
  }
}

export interface HealthOptions {
  /** The liveness endpoint's URL; readiness is answered at READINESS_PATH on its host and port. */
  url: string;
  /** One round of every service's probes. */
  probe: () => Promise<ProbeRound[]>;
  /** Why each function service that is down is, by name. */
  down: () => Record<string, string>;
  /** Why each function service refused is, by name. */
  refused: () => Record<string, string>;
  /** Why the gateway cannot work, besides stopping and its probes (Condition.faults). */
  faults: () => string[];
  /** Why the gateway is not ready yet (Condition.notReady). */
  notReady: () => string[];
  /** Aborted once the gateway is stopping. */
  stopping: AbortSignal;
  cacheMs: number;
  logger: Logger;
}

export class HealthEndpoint implements Part {
  readonly name = 'health endpoint';
  /** Every replica answers for itself. */
  readonly placement = 'every replica';
  readonly #options: HealthOptions;
  readonly #address: LivenessAddress;
  readonly #probes: ProbeCache;
  #server: Server | undefined;

  constructor(options: HealthOptions) {
    this.#options = options;
    this.#address = livenessAddress(options.url);
    this.#probes = new ProbeCache(options.probe, options.cacheMs);
  }

  /** Where liveness is answered, its port known once it listens (port 0 takes any free one). */
  get url(): string {
    return `${this.#origin()}${this.#address.path}`;
  }

  /** Where readiness is answered. */
  get readinessUrl(): string {
    return `${this.#origin()}${READINESS_PATH}`;
  }

  async start(): Promise<void> {
    const server = createServer((request, response) => void this.#answer(request, response));
    await listen(server, this.#address.port, this.#address.host);
    this.#server = server;
    this.#options.logger.info(`liveness endpoint at ${this.url}, readiness at ${this.readinessUrl}`);
  }

  async stop(): Promise<void> {
    const server = this.#server;
    if (!server) return;
    await closeNow(server);
  }

  #origin(): string {
    return origin(this.#server, this.#address);
  }

  async #answer(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const path = new URL(request.url ?? '/', 'http://health').pathname;
    if (path !== this.#address.path && path !== READINESS_PATH) {
      return reply(response, 404, { error: `no route for ${path}` });
    }
    if (request.method !== 'GET') return reply(response, 405, { error: 'the health endpoint answers GET' });
    const { down, refused, faults, notReady, stopping } = this.#options;
    if (path === READINESS_PATH) {
      const readiness = readinessOf({
        stopping: stopping.aborted,
        down: down(),
        refused: refused(),
        notReady: notReady(),
      });
      return reply(response, readiness.status, readiness.body);
    }
    try {
      // The rest is asked now; only the probes' results are kept for a while.
      const rounds = stopping.aborted ? [] : await this.#probes.get();
      const health = healthOf(rounds, {
        stopping: stopping.aborted,
        down: down(),
        refused: refused(),
        faults: faults(),
      });
      reply(response, health.status, health.body);
    } catch (error) {
      reply(response, 500, { error: `the probes could not be run: ${(error as Error).message}` });
    }
  }
}

function reply(response: ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}
