import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { context, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import { invoke } from './invoke.ts';
import { createRegistry } from './registry.ts';
import { invocation } from './test-helpers.ts';

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALL_SPAN_ID = '00f067aa0ba902b7';

describe("the SDK's spans, where the process registers a tracer provider", () => {
  const exporter = new InMemorySpanExporter();
  const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
  before(() => {
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    trace.setGlobalTracerProvider(provider);
  });
  after(async () => {
    await provider.shutdown();
    trace.disable();
    context.disable();
  });

  it("makes a span per handler, a child of the gateway's call, with the error of one that failed", async () => {
    const registry = createRegistry();
    registry.on.create('kopfexamples', { id: 'create_fn' }, () => {
      // The handler's own spans are children of its span.
      trace.getTracer('user').startSpan('inside').end();
      return 'made';
    });
    registry.on.create('kopfexamples', { id: 'broken_fn' }, () => {
      throw new RangeError('out of range');
    });
    const request = invocation(
      ['create_fn', 'broken_fn'],
      {},
      { traceparent: `00-${TRACE_ID}-${CALL_SPAN_ID}-01` },
    );
    await invoke(request, registry.handlers);

    const spans = exporter.getFinishedSpans();
    const byName = new Map(spans.map((span) => [span.name, span]));
    const created = byName.get('handler create_fn');
    const broken = byName.get('handler broken_fn');
    assert.ok(created && broken, `spans: ${spans.map((span) => span.name).join(', ')}`);
    for (const span of [created, broken]) {
      assert.equal(span.spanContext().traceId, TRACE_ID);
      assert.equal(span.parentSpanContext?.spanId, CALL_SPAN_ID);
      assert.equal(span.kind, SpanKind.SERVER);
    }
    assert.deepEqual(created.attributes, {
      'causeway.resource': 'kopfexamples.kopf.dev',
      'causeway.object': 'default/kex-1',
      'k8s.namespace.name': 'default',
      'causeway.cause': 'create',
      'causeway.handler': 'create_fn',
      'causeway.outcome': 'success',
    });
    assert.equal(created.status.code, SpanStatusCode.UNSET);
    assert.equal(byName.get('inside')?.parentSpanContext?.spanId, created.spanContext().spanId);
    assert.equal(broken.attributes['causeway.outcome'], 'temporary');
    assert.deepEqual(broken.status, { code: SpanStatusCode.ERROR, message: 'out of range' });
    const [exception] = broken.events;
    assert.equal(exception?.name, 'exception');
    assert.equal(exception?.attributes?.['exception.type'], 'RangeError');
    assert.equal(exception?.attributes?.['exception.message'], 'out of range');
  });
});
