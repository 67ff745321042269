import { metricsAddress } from '../../metrics/endpoint.ts';
import { flag, group, UsageError } from '../command-line.ts';

/** What the gateway or the function service tells of itself (run, gateway, dev, serve). */
export const OBSERVABILITY = group(
  'Observability (docs/observability.md)',
  flag({
    name: 'metrics',
    value: '<host:port>',
    description:
      'Serve Prometheus metrics at /metrics on this address, e.g. 0.0.0.0:9090 or :9090 (every address).',
  }),
);

/** The address, once the metrics endpoint could listen there. */
export function metricsListen(address: string): string {
  try {
    metricsAddress(address);
  } catch (error) {
    throw new UsageError(`--metrics: ${(error as Error).message}`);
  }
  return address;
}
