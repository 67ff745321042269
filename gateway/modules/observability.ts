/**
 * Observability: the Prometheus metrics (when asked for) and their endpoint, the event loop's sampler,
 * and what every request of the cluster client tells them and the log of the API's reachability.
 */
import type { RequestObserver } from '../kube/client.ts';
import { reachabilityLog } from '../kube/reachability.ts';
import { MetricsEndpoint, metricsAddress } from '../metrics/endpoint.ts';
import { GatewayMetrics } from '../metrics/metrics.ts';
import type { Ground } from './ground.ts';

export interface Observability {
  /** Undefined when the gateway keeps none (no `metrics` address). */
  metrics: GatewayMetrics | undefined;
  endpoint: MetricsEndpoint | undefined;
  observeRequest: RequestObserver;
}

export async function observability({ options, logger, manager }: Ground): Promise<Observability> {
  const metrics = options.metrics ? new GatewayMetrics() : undefined;
  const endpoint =
    metrics && options.metrics
      ? new MetricsEndpoint(metrics, metricsAddress(options.metrics), logger)
      : undefined;
  if (endpoint) await manager.add('observability', endpoint);
  if (metrics) await manager.add('observability', metrics.eventLoop);
  const reachability = reachabilityLog(logger);
  return {
    metrics,
    endpoint,
    observeRequest: (method, path, status, error) => {
      metrics?.apiRequest(method, path, status);
      reachability(method, path, status, error);
    },
  };
}
