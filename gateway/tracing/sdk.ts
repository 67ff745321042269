/**
 * OpenTelemetry's trace SDK for a `causeway` process (the gateway, or a function service `causeway
 * serve` runs), started from the standard environment variables when they name an OTLP endpoint, and
 * not loaded at all otherwise: the spans (tracing/spans.ts, and the SDK's in causeway/functions) then
 * stay the API's no-ops.
 *
 * Read here: OTEL_SDK_DISABLED, OTEL_TRACES_EXPORTER (`none` exports nothing), OTEL_TRACES_SAMPLER and
 * OTEL_TRACES_SAMPLER_ARG, OTEL_BSP_SCHEDULE_DELAY, OTEL_BSP_EXPORT_TIMEOUT, OTEL_BSP_MAX_QUEUE_SIZE,
 * OTEL_BSP_MAX_EXPORT_BATCH_SIZE; OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES by the resource's
 * detectors; OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT, _HEADERS, _TIMEOUT, _CERTIFICATE... by the exporter,
 * which sends OTLP over HTTP as JSON.
 */
import { context, DiagLogLevel, diag, trace } from '@opentelemetry/api';
import type { Sampler } from '@opentelemetry/sdk-trace';
import type { Logger } from '../logging.ts';

export interface Tracing {
  /** Exports the spans still buffered, and stops. */
  shutdown(): Promise<void>;
}

type Environment = Readonly<Record<string, string | undefined>>;

/** Whether the environment asks for traces: an OTLP endpoint is named, and the SDK is not disabled. */
export function tracesWanted(env: Environment = process.env): boolean {
  const endpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_EXPORTER_OTLP_ENDPOINT;
  return Boolean(endpoint) && env.OTEL_SDK_DISABLED?.trim() !== 'true' && env.OTEL_TRACES_EXPORTER !== 'none';
}

/**
 * Registers a tracer provider that exports to the OTLP endpoint the environment names, and the
 * context manager that makes a span the parent of those started within it; undefined, having loaded
 * nothing, when the environment names none. `serviceName`: unless OTEL_SERVICE_NAME gives one.
 */
export async function startTracing(serviceName: string, logger: Logger): Promise<Tracing | undefined> {
  if (!tracesWanted()) return undefined;
  const [{ AsyncLocalStorageContextManager }, { OTLPTraceExporter }, resources, sdk] = await Promise.all([
    import('@opentelemetry/context-async-hooks'),
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/sdk-trace'),
  ]);
  // The SDK's own troubles (an export refused, an endpoint unreachable) in the process's log.
  diag.setLogger(
    {
      error: (message) => logger.error(`tracing: ${message}`),
      warn: (message) => logger.warning(`tracing: ${message}`),
      info: () => {},
      debug: () => {},
      verbose: () => {},
    },
    DiagLogLevel.WARN,
  );
  const detected = resources.detectResources({
    detectors: [resources.serviceNameEnvDetector, resources.resourceAttributesEnvDetector],
  });
  const resource = resources
    .defaultResource()
    .merge(resources.resourceFromAttributes({ 'service.name': serviceName }))
    .merge(detected);
  const processor = new sdk.BatchSpanProcessor({ exporter: new OTLPTraceExporter(), ...batching() });
  const provider = new sdk.TracerProvider({ resource, sampler: sampler(sdk), spanProcessors: [processor] });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  trace.setGlobalTracerProvider(provider);
  logger.info(`exporting traces over OTLP as ${resource.attributes['service.name']}`);
  return {
    async shutdown() {
      await provider.shutdown();
      trace.disable();
      context.disable();
      diag.disable();
    },
  };
}

/** The sampler OTEL_TRACES_SAMPLER names (with its OTEL_TRACES_SAMPLER_ARG); parent-based, always on, by default. */
export function sampler(
  sdk: typeof import('@opentelemetry/sdk-trace'),
  env: Environment = process.env,
): Sampler {
  const ratio = Number(env.OTEL_TRACES_SAMPLER_ARG ?? 1);
  const traceIdRatio = () => new sdk.TraceIdRatioBasedSampler(Number.isFinite(ratio) ? ratio : 1);
  switch (env.OTEL_TRACES_SAMPLER?.trim()) {
    case 'always_on':
      return new sdk.AlwaysOnSampler();
    case 'always_off':
      return new sdk.AlwaysOffSampler();
    case 'traceidratio':
      return traceIdRatio();
    case 'parentbased_always_off':
      return new sdk.ParentBasedSampler({ root: new sdk.AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new sdk.ParentBasedSampler({ root: traceIdRatio() });
    default:
      return new sdk.ParentBasedSampler({ root: new sdk.AlwaysOnSampler() });
  }
}

/** The batch span processor's settings the OTEL_BSP_* variables give; the SDK's defaults for the rest. */
function batching(env: Environment = process.env) {
  const read = (name: string) => {
    const value = Number(env[name]);
    return env[name] && Number.isFinite(value) && value >= 0 ? value : undefined;
  };
  const settings = {
    scheduledDelayMillis: read('OTEL_BSP_SCHEDULE_DELAY'),
    exportTimeoutMillis: read('OTEL_BSP_EXPORT_TIMEOUT'),
    maxQueueSize: read('OTEL_BSP_MAX_QUEUE_SIZE'),
    maxExportBatchSize: read('OTEL_BSP_MAX_EXPORT_BATCH_SIZE'),
  };
  return Object.fromEntries(Object.entries(settings).filter(([, value]) => value !== undefined));
}
