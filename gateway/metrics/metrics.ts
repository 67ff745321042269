/**
 * The gateway's metrics, in a registry of its own (two gateways in one process count apart), made
 * from the catalogue and fed by what each layer tells its observer: the API client its requests, the
 * queues their objects, the function services their calls, the webhook server its reviews. The
 * layers know nothing of Prometheus; only this module does.
 */
import { createHistogram } from 'node:perf_hooks';
import { getHeapStatistics } from 'node:v8';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { BudgetName, BudgetReading } from '../dispatch/budget.ts';
import type { CallObserver } from '../dispatch/function-service.ts';
import type { QueueObserver, QueueReadings } from '../reactor/queue.ts';
import type { ObjectReadings, PipelineObserver } from '../resource/pipeline.ts';
import { CATALOGUE, DURATION_BUCKETS, type MetricName, type MetricSpec } from './catalogue.ts';
import {
  delaysStoodFor,
  EventLoopSampler,
  SAMPLE_INTERVAL_MS,
  type ThreadCpuClock,
  threadCpuClock,
} from './event-loop.ts';

export type Metric = Counter | Gauge | Histogram;

/**
 * The metrics of `specs`, made in `registry`: each gauge set, when scraped, by its reading (those
 * without one are never exported with a value).
 */
export function registered<Name extends string>(
  registry: Registry,
  specs: readonly (MetricSpec & { name: Name })[],
  readings: Partial<Record<Name, (gauge: Gauge) => void>> = {},
): Map<Name, Metric> {
  const metrics = new Map<Name, Metric>();
  for (const spec of specs) {
    const common = { name: spec.name, help: spec.help, labelNames: spec.labels, registers: [registry] };
    const read = readings[spec.name];
    metrics.set(
      spec.name,
      spec.type === 'counter'
        ? new Counter(common)
        : spec.type === 'histogram'
          ? new Histogram({ ...common, buckets: [...(spec.buckets ?? DURATION_BUCKETS)] })
          : new Gauge({
              ...common,
              collect() {
                read?.(this);
              },
            }),
    );
  }
  return metrics;
}

/** What a metrics endpoint serves: the metrics as Prometheus text, and its content type. */
export interface Exposition {
  text(): Promise<{ body: string; contentType: string }>;
}

/** Handler ids one service's metrics are labelled with, at most: the others are counted as OTHER_HANDLERS. */
export const MAX_HANDLER_LABELS = 200;
export const OTHER_HANDLERS = 'other';

export class GatewayMetrics implements Exposition {
  readonly registry = new Registry();
  readonly #metrics: Map<MetricName, Metric>;
  /** What the gauges read when scraped: each resource's queue, each service's circuit, leadership. */
  readonly #queues = new Map<string, QueueReadings>();
  readonly #background = new Map<string, { timers(): number; daemons(): number }>();
  readonly #objects = new Map<string, ObjectReadings>();
  /** By service: the handler ids its metrics are labelled with, MAX_HANDLER_LABELS at most. */
  readonly #handlerLabels = new Map<string, Set<string>>();
  #breakers: () => Iterable<[service: string, open: boolean]> = () => [];
  #refusals: () => Iterable<[service: string, refused: boolean]> = () => [];
  #budgets: () => Iterable<BudgetReading> = () => [];
  #leading: { name: string; leads: () => boolean } | undefined;
  /** Feeds the event loop's delay histograms while it runs: the gateway starts it with its endpoint. */
  readonly eventLoop: EventLoopSampler;

  /** `threadCpu` null: the main thread's CPU time cannot be read, and the own delay is not served. */
  constructor(threadCpu: ThreadCpuClock | null = threadCpuClock()) {
    // Each run's delay since the previous scrape, in µs, for nodejs_eventloop_lag_p99_seconds.
    const lag = createHistogram();
    // What the gauges read when scraped: set by each one's `collect`.
    const readings: Partial<Record<MetricName, (gauge: Gauge) => void>> = {
      workqueue_depth: (gauge) => {
        for (const [name, queue] of this.#queues) gauge.set({ name }, queue.depth);
      },
      causeway_oldest_unhandled_seconds: (gauge) => {
        for (const [resource, queue] of this.#queues) gauge.set({ resource }, queue.oldestUnhandledSeconds());
      },
      causeway_function_breaker_open: (gauge) => {
        gauge.reset();
        for (const [service, open] of this.#breakers()) gauge.set({ service }, open ? 1 : 0);
      },
      causeway_function_service_refused: (gauge) => {
        gauge.reset();
        for (const [service, refused] of this.#refusals()) gauge.set({ service }, refused ? 1 : 0);
      },
      causeway_function_budget_used: (gauge) => {
        gauge.reset();
        for (const { service, budget, used } of this.#budgets()) gauge.set({ service, budget }, used);
      },
      causeway_function_budget_limit: (gauge) => {
        gauge.reset();
        for (const { service, budget, limit } of this.#budgets()) gauge.set({ service, budget }, limit);
      },
      causeway_objects: (gauge) => {
        for (const [resource, objects] of this.#objects) gauge.set({ resource }, objects.seen());
      },
      causeway_owned_objects: (gauge) => {
        for (const [resource, objects] of this.#objects) gauge.set({ resource }, objects.owned());
      },
      causeway_timers: (gauge) => {
        for (const [resource, background] of this.#background) gauge.set({ resource }, background.timers());
      },
      causeway_daemons: (gauge) => {
        for (const [resource, background] of this.#background) gauge.set({ resource }, background.daemons());
      },
      nodejs_eventloop_lag_p99_seconds: (gauge) => {
        gauge.set(lag.count === 0 ? 0 : lag.percentile(99) / 1e6);
        lag.reset();
      },
      nodejs_heap_size_used_bytes: (gauge) => gauge.set(getHeapStatistics().used_heap_size),
      leader_election_master_status: (gauge) => {
        if (this.#leading) gauge.set({ name: this.#leading.name }, this.#leading.leads() ? 1 : 0);
      },
    };
    this.#metrics = registered(this.registry, CATALOGUE, readings);
    if (!threadCpu) this.registry.removeSingleMetric('causeway_eventloop_own_delay_seconds');
    const delays = this.#histogram('causeway_eventloop_delay_seconds');
    const ownDelays = this.#histogram('causeway_eventloop_own_delay_seconds');
    this.eventLoop = new EventLoopSampler(({ delayMs, ownMs }) => {
      lag.record(Math.max(1, Math.round(delayMs * 1000)));
      for (const each of delaysStoodFor(delayMs, SAMPLE_INTERVAL_MS)) delays.observe(each / 1000);
      if (ownMs !== undefined)
        for (const each of delaysStoodFor(ownMs, SAMPLE_INTERVAL_MS)) ownDelays.observe(each / 1000);
    }, threadCpu);
  }

  /** The metrics as Prometheus text, and its content type. */
  async text(): Promise<{ body: string; contentType: string }> {
    return { body: await this.registry.metrics(), contentType: this.registry.contentType };
  }

  #counter(name: MetricName): Counter {
    return this.#metrics.get(name) as Counter;
  }

  #histogram(name: MetricName): Histogram {
    return this.#metrics.get(name) as Histogram;
  }

  /** A request to the Kubernetes API answered (`status`), or not (undefined). */
  readonly apiRequest = (method: string, path: string, status: number | undefined): void => {
    this.#counter('rest_client_requests_total').inc({
      code: status === undefined ? '<error>' : String(status),
      method,
    });
    if (method !== 'GET' && status !== undefined && status < 300) {
      this.#counter('causeway_api_writes_total').inc({ verb: method, subresource: subresourceOf(path) });
    }
  };

  /** The observer of one resource's pipeline, named as controller-runtime names a controller's. */
  pipeline(name: string): PipelineObserver {
    return {
      queue: (readings) => this.queue(name, readings),
      background: (readings) => this.#background.set(name, readings),
      objects: (readings) => this.#objects.set(name, readings),
      watchRestarted: () => this.#counter('causeway_watch_restarts_total').inc({ resource: name }),
      shareWaited: (service) =>
        this.#counter('causeway_function_share_waits_total').inc({ service, resource: name }),
    };
  }

  /** The observer of one resource's queue. */
  queue(name: string, readings: QueueReadings): QueueObserver {
    this.#queues.set(name, readings);
    const labels = { name };
    return {
      added: () => this.#counter('workqueue_adds_total').inc(labels),
      started: (waitedMs) =>
        this.#histogram('workqueue_queue_duration_seconds').observe(labels, waitedMs / 1000),
      finished: (result, tookMs) => {
        this.#histogram('workqueue_work_duration_seconds').observe(labels, tookMs / 1000);
        this.#histogram('controller_runtime_reconcile_time_seconds').observe(
          { controller: name },
          tookMs / 1000,
        );
        this.#counter('controller_runtime_reconcile_total').inc({ controller: name, result });
        if (result !== 'success') this.#counter('workqueue_retries_total').inc(labels);
      },
    };
  }

  readonly calls: CallObserver = {
    requested: (service, status, tookMs) => {
      const code = status === undefined ? '<error>' : String(status);
      this.#counter('causeway_function_requests_total').inc({ service, code });
      this.#histogram('causeway_function_request_duration_seconds').observe({ service }, tookMs / 1000);
    },
    called: (service, cause, outcomes, tookMs) => {
      for (const [id, outcome] of Object.entries(outcomes)) {
        const handler = this.#handlerLabel(service, id);
        this.#counter('causeway_handler_calls_total').inc({ service, handler, cause, outcome });
        this.#histogram('causeway_handler_duration_seconds').observe({ service, handler }, tookMs / 1000);
      }
    },
  };

  /**
   * The label of a service's handler: its id, for the first MAX_HANDLER_LABELS ids seen, then `other`.
   * A service chooses its ids and may redeploy with new ones without end; each would be series of its own.
   */
  #handlerLabel(service: string, id: string): string {
    let seen = this.#handlerLabels.get(service);
    if (!seen) {
      seen = new Set();
      this.#handlerLabels.set(service, seen);
    }
    if (seen.has(id)) return id;
    if (seen.size >= MAX_HANDLER_LABELS) return OTHER_HANDLERS;
    seen.add(id);
    return id;
  }

  /** With peering: where leadership is read, for the gateways of `name`. */
  watchLeading(name: string, leads: () => boolean): void {
    this.#leading = { name, leads };
  }

  /** Where the breakers' gauge reads whether each service's circuit is open. */
  watchBreakers(source: () => Iterable<[service: string, open: boolean]>): void {
    this.#breakers = source;
  }

  /** Where the refusals' gauge reads whether each service refused once is refused now. */
  watchRefusals(source: () => Iterable<[service: string, refused: boolean]>): void {
    this.#refusals = source;
  }

  /** Where the budgets' gauges read each service's budgets. */
  watchBudgets(source: () => Iterable<BudgetReading>): void {
    this.#budgets = source;
  }

  /** An ask that found a service's budget short. */
  readonly budgetWaited = (service: string, budget: BudgetName): void => {
    this.#counter('causeway_function_budget_waits_total').inc({ service, budget });
  };

  /** An admission review answered with `status` on `webhook` (a path the gateway serves, or `other`). */
  readonly webhookAnswered = (webhook: string, status: number, tookMs: number): void => {
    this.#counter('controller_runtime_webhook_requests_total').inc({ webhook, code: String(status) });
    this.#histogram('controller_runtime_webhook_latency_seconds').observe({ webhook }, tookMs / 1000);
  };
}

/**
 * The subresource a request path names (`/apis/g/v/namespaces/ns/plural/name/status` → `status`), empty
 * for the object itself or a collection.
 */
export function subresourceOf(path: string): string {
  const parts = path.split('?')[0]?.split('/').filter(Boolean) ?? [];
  // After /api/v1 or /apis/group/version: [namespaces, ns,] plural[, name[, subresource]].
  const rest = parts.slice(parts[0] === 'api' ? 2 : 3);
  const named = rest[0] === 'namespaces' && rest.length > 2 ? rest.slice(2) : rest;
  return named[2] ?? '';
}
