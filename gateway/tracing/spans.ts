/**
 * The gateway's spans, made with the OpenTelemetry API alone: they cost a no-op unless a tracer
 * provider is registered, as tracing/sdk.ts registers one for the CLI when an OTLP endpoint is set
 * (an application that embeds the gateway may register its own). A cycle's span is the parent of the
 * spans of the calls and the API writes it makes, through the active context.
 */
import { type Span, type SpanOptions, SpanStatusCode, trace } from '@opentelemetry/api';

/** A proxy until a provider is registered, which it then uses: taken once, at load. */
const tracer = trace.getTracer('causeway.gateway');

/** Runs `work` in a span of its own, active meanwhile; an error it throws is recorded on it. */
export function inSpan<T>(name: string, options: SpanOptions, work: (span: Span) => Promise<T>): Promise<T> {
  return tracer.startActiveSpan(name, options, async (span) => {
    try {
      return await work(span);
    } catch (error) {
      recordFailure(span, error);
      throw error;
    } finally {
      span.end();
    }
  });
}

/** The span failed with `error`: status ERROR, and the exception as an event. */
export function recordFailure(span: Span, error: unknown): void {
  const message = error instanceof Error ? error.message : String(error);
  span.recordException(error instanceof Error ? error : message);
  span.setStatus({ code: SpanStatusCode.ERROR, message });
}

/** Whether a span is being recorded here now: writes to the API are spans only within one (a cycle's). */
export function inRecordedSpan(): boolean {
  return trace.getActiveSpan()?.isRecording() === true;
}

/** The span's W3C trace context, for the calls it makes; undefined when it has none (nothing traces). */
export function traceparentOf(span: Span): string | undefined {
  const context = span.spanContext();
  if (!trace.isSpanContextValid(context)) return undefined;
  return `00-${context.traceId}-${context.spanId}-${context.traceFlags.toString(16).padStart(2, '0')}`;
}

/** `server.address` and `server.port` of a URL, as the semantic conventions of HTTP clients name them. */
export function serverAttributes(url: string): Record<string, string | number> {
  const { hostname, port, protocol } = new URL(url);
  return {
    'server.address': hostname.replace(/^\[|\]$/g, ''),
    'server.port': port ? Number(port) : protocol === 'https:' ? 443 : 80,
  };
}
