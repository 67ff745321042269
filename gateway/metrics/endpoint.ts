/**
 * Serves the metrics (a gateway's, or a function service's) as Prometheus text at `/metrics`, over
 * plain HTTP as Prometheus scrapes a pod, on every replica: each counts what it does itself.
 */
import { createServer, type Server } from 'node:http';
import { closeNow, listen, origin } from '../listening.ts';
import type { Logger } from '../logging.ts';
import type { Part } from '../manager/manager.ts';
import type { Exposition } from './metrics.ts';

export const METRICS_PATH = '/metrics';

/** Where to listen, from `HOST:PORT` (`[::1]:9090` for IPv6; `:9090` for every address). */
export interface MetricsAddress {
  host: string;
  port: number;
}

export function metricsAddress(given: string): MetricsAddress {
  const match = /^(?:\[([^\]]+)\]|([^:]*)):(\d{1,5})$/.exec(given);
  const port = Number(match?.[3]);
  if (!match || port > 65_535) {
    throw new Error(`the metrics address must be HOST:PORT (such as 0.0.0.0:9090, or :9090), got "${given}"`);
  }
  return { host: match[1] ?? (match[2] || '0.0.0.0'), port };
}

export class MetricsEndpoint implements Part {
  readonly name = 'metrics endpoint';
  readonly placement = 'every replica';
  readonly #metrics: Exposition;
  readonly #address: MetricsAddress;
  readonly #logger: Logger;
  #server: Server | undefined;

  constructor(metrics: Exposition, address: MetricsAddress, logger: Logger) {
    this.#metrics = metrics;
    this.#address = address;
    this.#logger = logger;
  }

  /** Where the metrics are served, the port known once it listens (port 0 takes any free one). */
  get url(): string {
    return `${origin(this.#server, this.#address)}${METRICS_PATH}`;
  }

  async start(): Promise<void> {
    const server = createServer((request, response) => {
      const path = request.url?.split('?')[0];
      if (request.method !== 'GET' || path !== METRICS_PATH) {
        response.writeHead(404, { 'content-type': 'text/plain' }).end(`metrics are at GET ${METRICS_PATH}\n`);
        return;
      }
      this.#metrics.text().then(
        ({ body, contentType }) => response.writeHead(200, { 'content-type': contentType }).end(body),
        (error: Error) => {
          this.#logger.error(`metrics: could not collect them: ${error.message}`);
          response
            .writeHead(500, { 'content-type': 'text/plain' })
            .end('the metrics could not be collected\n');
        },
      );
    });
    await listen(server, this.#address.port, this.#address.host);
    this.#server = server;
    this.#logger.info(`metrics at ${this.url}`);
  }

  async stop(): Promise<void> {
    const server = this.#server;
    if (!server) return;
    await closeNow(server);
    this.#server = undefined;
  }
}
