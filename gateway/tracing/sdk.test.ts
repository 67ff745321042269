import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { trace } from '@opentelemetry/api';
import * as sdk from '@opentelemetry/sdk-trace';
import { createLogger } from '../logging.ts';
import { sampler, startTracing, tracesWanted } from './sdk.ts';
import { inRecordedSpan, inSpan, traceparentOf } from './spans.ts';

describe('tracing from the environment', () => {
  it('is wanted where an OTLP endpoint is named, unless the SDK is disabled or its exporter is none', () => {
    const endpoint = 'http://collector:4318';
    assert.equal(tracesWanted({}), false);
    assert.equal(tracesWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: '' }), false);
    assert.equal(tracesWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: endpoint }), true);
    assert.equal(tracesWanted({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${endpoint}/v1/traces` }), true);
    assert.equal(tracesWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_SDK_DISABLED: 'true' }), false);
    assert.equal(
      tracesWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_TRACES_EXPORTER: 'none' }),
      false,
    );
  });

  it('starts nothing without an endpoint: the spans stay no-ops, and calls get a new trace of their own', async () => {
    const saved = { ...process.env };
    for (const name of Object.keys(process.env)) if (name.startsWith('OTEL_')) delete process.env[name];
    try {
      assert.equal(await startTracing('causeway-gateway', createLogger({ level: 'error' })), undefined);
    } finally {
      Object.assign(process.env, saved);
    }
    await inSpan('cycle', {}, async (span) => {
      assert.equal(span.isRecording(), false);
      assert.equal(inRecordedSpan(), false, 'so API writes make no span');
      assert.equal(traceparentOf(span), undefined, 'so the call makes a trace id of its own');
    });
    assert.equal(trace.getTracer('any').startSpan('any').isRecording(), false);
  });

  it('samples as OTEL_TRACES_SAMPLER says, parent-based and always on by default', () => {
    const named = (env: Record<string, string>) => sampler(sdk, env).toString();
    assert.match(named({}), /^ParentBased\{root=AlwaysOnSampler/);
    assert.equal(named({ OTEL_TRACES_SAMPLER: 'always_off' }), 'AlwaysOffSampler');
    assert.equal(
      named({ OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.25' }),
      'TraceIdRatioBased{0.25}',
    );
    assert.match(
      named({ OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.5' }),
      /^ParentBased\{root=TraceIdRatioBased\{0\.5\}/,
    );
  });
});
