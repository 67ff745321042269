/**
 * The metrics of a function service served by `causeway serve`: the requests it answered, those it
 * refused and why, and its handlers' runs, told by the operator through its OBSERVED.
 */
import { type Counter, type Histogram, Registry } from 'prom-client';
import type { ServiceObserver } from '../../protocol/index.ts';
import { SERVICE_CATALOGUE, type ServiceMetricName } from './catalogue.ts';
import { type Exposition, type Metric, registered } from './metrics.ts';

export class ServiceMetrics implements Exposition {
  readonly registry = new Registry();
  readonly #metrics: Map<ServiceMetricName, Metric> = registered(this.registry, SERVICE_CATALOGUE);

  async text(): Promise<{ body: string; contentType: string }> {
    return { body: await this.registry.metrics(), contentType: this.registry.contentType };
  }

  #counter(name: ServiceMetricName): Counter {
    return this.#metrics.get(name) as Counter;
  }

  /** A request answered with `status`. */
  readonly answered = (status: number): void => {
    this.#counter('causeway_service_requests_total').inc({ code: String(status) });
  };

  readonly observer: ServiceObserver = {
    refused: (reason) => this.#counter('causeway_service_refused_total').inc({ reason }),
    handled: (handler, cause, outcome, ms) => {
      this.#counter('causeway_service_handler_calls_total').inc({ handler, cause, outcome });
      (this.#metrics.get('causeway_service_handler_duration_seconds') as Histogram).observe(
        { handler },
        ms / 1000,
      );
    },
  };
}
