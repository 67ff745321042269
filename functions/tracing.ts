/**
 * The SDK's spans: one per handler run, continuing the trace of the gateway's call (its traceparent).
 * Made with the OpenTelemetry API alone, which runs wherever the SDK runs: they are no-ops unless the
 * process registers a tracer provider (`causeway serve` does when OTEL_EXPORTER_OTLP_ENDPOINT is set;
 * on Workers, Bun or Deno, whatever the user's own setup registers).
 */
import {
  type Attributes,
  type Context,
  context,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
} from '@opentelemetry/api';
import type { Outcome } from '../protocol/index.ts';

/** A proxy until a provider is registered, which it then uses. */
const tracer = trace.getTracer('causeway.functions');

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** The gateway's call as the parent of what runs for it: its W3C trace context, a remote span's. */
function callContext(traceparent: string | undefined): Context {
  const parsed = traceparent === undefined ? null : TRACEPARENT.exec(traceparent);
  if (!parsed) return context.active();
  const [, traceId, spanId, flags] = parsed as unknown as [string, string, string, string];
  return trace.setSpanContext(context.active(), {
    traceId,
    spanId,
    traceFlags: Number.parseInt(flags, 16),
    isRemote: true,
  });
}

/**
 * Runs a handler in a span of its own, the active one meanwhile (where a context manager keeps one),
 * so that the handler's own spans are its children. `run` is given what records an error the handler
 * threw; the outcome's status is the span's: an error when it failed.
 */
export async function inHandlerSpan(
  traceparent: string | undefined,
  id: string,
  attributes: Attributes,
  run: (thrown: (error: unknown) => void) => Promise<Outcome>,
): Promise<Outcome> {
  const parent = callContext(traceparent);
  const span = tracer.startSpan(
    `handler ${id}`,
    { kind: SpanKind.SERVER, attributes: { ...attributes, 'causeway.handler': id } },
    parent,
  );
  try {
    const outcome = await context.with(trace.setSpan(parent, span), () =>
      run((error) => thrown(span, error)),
    );
    span.setAttribute('causeway.outcome', outcome.status);
    if (failed(outcome)) span.setStatus({ code: SpanStatusCode.ERROR, message: outcome.message });
    return outcome;
  } finally {
    span.end();
  }
}

function thrown(span: Span, error: unknown): void {
  span.recordException(error instanceof Error ? error : String(error));
}

/** A failure to retry or given up, or an admission refused because its handler failed (not its decision). */
function failed(outcome: Outcome): outcome is Outcome & { message: string } {
  return (
    outcome.status === 'permanent' ||
    outcome.status === 'temporary' ||
    (outcome.status === 'denied' && outcome.code >= 500)
  );
}
