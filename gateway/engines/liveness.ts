/**
 * The liveness endpoint (Kopf's --liveness): GET at its path answers 200 with the probe handlers'
 * results by id while the gateway is healthy, and 500 with the reason while it is not: a probe
 * failed, a function service is down (its circuit breaker is open), or the gateway is stopping. The
 * probes' results are kept for a while (10 s, as Kopf does), so that frequent probing costs few calls.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Component } from '../components.ts';
import type { Logger } from '../logging.ts';
import type { ProbeRound } from './activities.ts';

export interface LivenessAddress {
  host: string;
  port: number;
  path: string;
}

/** Where to listen, from a URL such as `http://0.0.0.0:8080/healthz`: plain HTTP only, port 80 by default. */
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
  return {
    host: parsed.hostname.replace(/^\[|\]$/g, ''),
    port: parsed.port === '' ? 80 : Number(parsed.port),
    path: parsed.pathname,
  };
}

export interface Health {
  status: 200 | 500;
  body: Record<string, unknown>;
}

/**
 * The endpoint's answer: the probes' results by id (a probe id that two services share, by
 * `<service>/<id>`), or 500 with every reason the gateway is not healthy. Pure.
 */
export function healthOf(rounds: readonly ProbeRound[], down: readonly string[], stopping: boolean): Health {
  const reasons = [
    ...(stopping ? ['the gateway is stopping'] : []),
    ...down,
    ...rounds.flatMap((round) => round.failures),
  ];
  if (reasons.length > 0) return { status: 500, body: { error: reasons.join('; ') } };
  const counts = new Map<string, number>();
  for (const id of rounds.flatMap((round) => Object.keys(round.results))) {
    counts.set(id, (counts.get(id) ?? 0) + 1);
  }
  const body: Record<string, unknown> = {};
  for (const { service, results } of rounds) {
    for (const [id, result] of Object.entries(results)) {
      body[(counts.get(id) ?? 0) > 1 ? `${service}/${id}` : id] = result;
    }
  }
  return { status: 200, body };
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

export interface LivenessOptions {
  url: string;
  /** One round of every service's probes. */
  probe: () => Promise<ProbeRound[]>;
  /** Why each service that is down is. */
  down: () => string[];
  /** Aborted once the gateway is stopping. */
  stopping: AbortSignal;
  cacheMs: number;
  logger: Logger;
}

export class LivenessEndpoint implements Component {
  readonly name = 'liveness endpoint';
  /** Every replica answers for itself. */
  readonly leaderOnly = false;
  readonly #options: LivenessOptions;
  readonly #address: LivenessAddress;
  readonly #probes: ProbeCache;
  #server: Server | undefined;

  constructor(options: LivenessOptions) {
    this.#options = options;
    this.#address = livenessAddress(options.url);
    this.#probes = new ProbeCache(options.probe, options.cacheMs);
  }

  /** Where it answers, its port known once it listens (port 0 takes any free one). */
  get url(): string {
    const { host, path } = this.#address;
    const port = (this.#server?.address() as AddressInfo | null)?.port ?? this.#address.port;
    return `http://${host.includes(':') ? `[${host}]` : host}:${port}${path}`;
  }

  async start(): Promise<void> {
    const server = createServer((request, response) => void this.#answer(request, response));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.#address.port, this.#address.host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    this.#server = server;
    this.#options.logger.info(`liveness endpoint at ${this.url}`);
  }

  async stop(): Promise<void> {
    const server = this.#server;
    if (!server) return;
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  }

  async #answer(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const path = new URL(request.url ?? '/', 'http://liveness').pathname;
    if (path !== this.#address.path) return reply(response, 404, { error: `no route for ${path}` });
    if (request.method !== 'GET') return reply(response, 405, { error: 'the liveness endpoint answers GET' });
    const { down, stopping } = this.#options;
    try {
      // Down services and stopping are asked now; only the probes' results are kept for a while.
      const rounds = stopping.aborted ? [] : await this.#probes.get();
      const health = healthOf(rounds, down(), stopping.aborted);
      reply(response, health.status, health.body);
    } catch (error) {
      reply(response, 500, { error: `the probes could not be run: ${(error as Error).message}` });
    }
  }
}

function reply(response: ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}
