/**
 * Every metric the gateway exports, and every one `causeway serve` does, in two lists: what makes them
 * (metrics.ts, service-metrics.ts) and what documents them (docs/observability.md, held to these
 * lists by a test) are read from here.
 * Names are controller-runtime's (and client-go's) where the meaning is the same, so that the
 * dashboards and alerts Kubernetes users already have work; Causeway's own start with `causeway_`.
 */

export type MetricType = 'counter' | 'gauge' | 'histogram';

export interface MetricSpec {
  name: string;
  type: MetricType;
  help: string;
  labels: readonly string[];
  /** A histogram's, when not DURATION_BUCKETS. */
  buckets?: readonly number[];
}

/** Seconds: from a quick handler's call on loopback to a slow function's deadline. */
export const DURATION_BUCKETS = [
  0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
] as const;

/** Seconds: an event loop's delays, finer about the 50 ms that a gateway's p99 should stay under. */
export const EVENT_LOOP_BUCKETS = [
  0.001, 0.0025, 0.005, 0.01, 0.02, 0.03, 0.04, 0.05, 0.075, 0.1, 0.25, 0.5, 1, 2.5, 5,
] as const;

export const CATALOGUE = [
  {
    name: 'controller_runtime_reconcile_total',
    type: 'counter',
    help: 'Processing cycles of an object by result: success, error (the cycle failed and is retried with backoff), requeue_after (handlers asked to be called again later).',
    labels: ['controller', 'result'],
  },
  {
    name: 'controller_runtime_reconcile_time_seconds',
    type: 'histogram',
    help: "How long an object's processing cycle took, calls and writes included.",
    labels: ['controller'],
  },
  {
    name: 'workqueue_depth',
    type: 'gauge',
    help: 'Objects waiting for a processing cycle (not those in one).',
    labels: ['name'],
  },
  {
    name: 'causeway_oldest_unhandled_seconds',
    type: 'gauge',
    help: "How long the oldest change of a resource's objects that this gateway handles has waited to be handled (queued, in a cycle, to be retried, or waiting for a function service), 0 when none waits.",
    labels: ['resource'],
  },
  {
    name: 'workqueue_adds_total',
    type: 'counter',
    help: 'Objects queued for a processing cycle.',
    labels: ['name'],
  },
  {
    name: 'workqueue_queue_duration_seconds',
    type: 'histogram',
    help: 'How long an object waited in the queue before its cycle started.',
    labels: ['name'],
  },
  {
    name: 'workqueue_work_duration_seconds',
    type: 'histogram',
    help: "How long an object's processing cycle took.",
    labels: ['name'],
  },
  {
    name: 'workqueue_retries_total',
    type: 'counter',
    help: 'Cycles scheduled to run again after a delay: a failed cycle, a handler to retry, a requeue.',
    labels: ['name'],
  },
  {
    name: 'rest_client_requests_total',
    type: 'counter',
    help: "Requests to the Kubernetes API by HTTP status code (`<error>` when no answer came) and method, the watches' included.",
    labels: ['code', 'method'],
  },
  {
    name: 'causeway_api_writes_total',
    type: 'counter',
    help: 'Writes to the Kubernetes API that succeeded, by verb (POST, PUT, PATCH, DELETE) and subresource (empty for the object itself).',
    labels: ['verb', 'subresource'],
  },
  {
    name: 'causeway_watch_restarts_total',
    type: 'counter',
    help: 'Watches started again after a failure, or listed again after a 410 Gone, by resource (not their routine renewal).',
    labels: ['resource'],
  },
  {
    name: 'causeway_objects',
    type: 'gauge',
    help: "Objects of a resource this gateway's watches show now (every replica watches them all, sharded or not).",
    labels: ['resource'],
  },
  {
    name: 'causeway_owned_objects',
    type: 'gauge',
    help: 'Of those, the objects this gateway handles now: all of them, or its share when sharding. Summed over the replicas, as many as causeway_objects; fewer means objects no replica handles.',
    labels: ['resource'],
  },
  {
    name: 'causeway_timers',
    type: 'gauge',
    help: 'Timers kept now, by resource: one per object and timer handler that matches it.',
    labels: ['resource'],
  },
  {
    name: 'causeway_daemons',
    type: 'gauge',
    help: 'Daemons running now, by resource: one per object and daemon handler that matches it, until it ends.',
    labels: ['resource'],
  },
  {
    name: 'causeway_function_requests_total',
    type: 'counter',
    help: 'Requests to function services over HTTP by service and status code (`<error>` when no answer came); a batch of calls is one request.',
    labels: ['service', 'code'],
  },
  {
    name: 'causeway_function_request_duration_seconds',
    type: 'histogram',
    help: 'How long a request to a function service took, from sending it to its answer read.',
    labels: ['service'],
  },
  {
    name: 'causeway_function_breaker_open',
    type: 'gauge',
    help: "1 while a function service's circuit is open (it was found unreachable and is not called until its health check answers), 0 otherwise.",
    labels: ['service'],
  },
  {
    name: 'causeway_function_service_refused',
    type: 'gauge',
    help: '1 while a function service is refused (its manifest malformed or beyond its pin, or its webhooks refused by the apiserver): the others are served, and it is taken up once fixed; 0 once it is served again.',
    labels: ['service'],
  },
  {
    name: 'causeway_function_budget_used',
    type: 'gauge',
    help: "What a function service holds now of each of its budgets: reply_bytes (bytes of its replies read and not yet parsed), calls (its requests in flight), daemons (its daemons' calls open), index_bytes (bytes of its indexes' values).",
    labels: ['service', 'budget'],
  },
  {
    name: 'causeway_function_budget_limit',
    type: 'gauge',
    help: 'Each budget of a function service, whole (settings.calls: replyBytesPerService, concurrencyPerService, daemonsPerService, indexBytesPerService).',
    labels: ['service', 'budget'],
  },
  {
    name: 'causeway_function_budget_waits_total',
    type: 'counter',
    help: "Asks that found a function service's budget short: calls, replies and daemons that waited their turn, and, for index_bytes, updates of an index refused. Other services' work does not wait on it.",
    labels: ['service', 'budget'],
  },
  {
    name: 'causeway_function_share_waits_total',
    type: 'counter',
    help: "Cycles whose calls to a function service waited because it held its share of a resource's workers already (ceil(concurrency / services bound to the resource)): the other services' handlers on the object were called.",
    labels: ['service', 'resource'],
  },
  {
    name: 'causeway_handler_calls_total',
    type: 'counter',
    help: 'Handler calls by service, handler, cause and outcome: success, temporary (retried), permanent, skipped (filtered out by the service), denied (admission), or failed (the call itself failed: the service could not be asked or answered badly). The handler ids of a service beyond the first 200 seen are counted as handler `other`.',
    labels: ['service', 'handler', 'cause', 'outcome'],
  },
  {
    name: 'causeway_handler_duration_seconds',
    type: 'histogram',
    help: 'How long the call that ran a handler took, round trip, by service and handler.',
    labels: ['service', 'handler'],
  },
  {
    name: 'controller_runtime_webhook_requests_total',
    type: 'counter',
    help: 'Admission reviews answered, by webhook (`/<service>/<handler id>`) and HTTP status code.',
    labels: ['webhook', 'code'],
  },
  {
    name: 'controller_runtime_webhook_latency_seconds',
    type: 'histogram',
    help: 'How long an admission review took to answer, by webhook (`/<service>/<handler id>`).',
    labels: ['webhook'],
  },
  {
    name: 'nodejs_eventloop_lag_p99_seconds',
    type: 'gauge',
    help: "The 99th percentile of the event loop's delay since the previous scrape (sampled every 20 ms): how late the gateway's timers, watches and replies run.",
    labels: [],
  },
  {
    name: 'causeway_eventloop_delay_seconds',
    type: 'histogram',
    help: "How late a timer set every 20 ms runs, each time it runs, and, for a pause, each time it would have run during it (an interval less late each): the event loop's delay, as the gateway's timers, watches and replies see it, its waits for a CPU included.",
    labels: [],
    buckets: EVENT_LOOP_BUCKETS,
  },
  {
    name: 'causeway_eventloop_own_delay_seconds',
    type: 'histogram',
    help: "The same delays, each at most the CPU time the gateway's main thread used in its interval: the pauses of the gateway's own work (JavaScript, garbage collection), not its waits for a CPU (CFS throttling under a CPU limit, other processes). Beside causeway_eventloop_delay_seconds, it tells a busy gateway (both high) from a starved one (only the delay high). Not served on Node before 23.9, which cannot read a thread's CPU time.",
    labels: [],
    buckets: EVENT_LOOP_BUCKETS,
  },
  {
    name: 'nodejs_heap_size_used_bytes',
    type: 'gauge',
    help: 'The JavaScript heap in use (V8), garbage not yet collected included.',
    labels: [],
  },
  {
    name: 'leader_election_master_status',
    type: 'gauge',
    help: 'With peering: 1 while this replica leads (runs the watches, handlers, timers and daemons), 0 while it stands by.',
    labels: ['name'],
  },
] as const satisfies readonly MetricSpec[];

export type MetricName = (typeof CATALOGUE)[number]['name'];

/** What a function service served by `causeway serve` exports. */
export const SERVICE_CATALOGUE = [
  {
    name: 'causeway_service_requests_total',
    type: 'counter',
    help: 'Requests the function service answered, by HTTP status code.',
    labels: ['code'],
  },
  {
    name: 'causeway_service_refused_total',
    type: 'counter',
    help: 'Requests refused before any handler ran, by reason: unsigned, signature, expired, audience, route, body (altered), replay, too-large, and the other checks of a token or session.',
    labels: ['reason'],
  },
  {
    name: 'causeway_service_handler_calls_total',
    type: 'counter',
    help: "Handlers run, by handler, the call's cause and outcome (success, temporary, permanent, skipped, denied).",
    labels: ['handler', 'cause', 'outcome'],
  },
  {
    name: 'causeway_service_handler_duration_seconds',
    type: 'histogram',
    help: 'How long a handler ran, by handler.',
    labels: ['handler'],
  },
] as const satisfies readonly MetricSpec[];

export type ServiceMetricName = (typeof SERVICE_CATALOGUE)[number]['name'];
