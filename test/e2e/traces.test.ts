/**
 * OpenTelemetry traces, as a collector receives them: `causeway gateway` and `causeway serve`, as
 * processes with the standard OTEL_* variables naming an OTLP/HTTP receiver in this one, export the
 * spans of one object's cycle as one trace: the gateway's cycle, its call of the function service,
 * the handler's span in the service, and the write of the object's status.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { PATHS } from '../../protocol/index.ts';
import { testNamespace } from '../support/cluster.ts';
import { applyFile, createKopfExample, eventually, statusOnceThere } from '../support/operator.ts';
import { causeway, serveOnLoopback } from '../support/processes.ts';

const SECRET = 'the-shared-secret-of-the-traces-test-0123456789';
const EXAMPLE = 'examples/01-minimal/operator.ts';
const SCOPE = 'test/fixtures/kopfexample-scope.yaml';

/** A span as the receiver keeps it: its ids, its service, and its attributes as plain values. */
interface ReceivedSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId: string | undefined;
  name: string;
  attributes: Record<string, unknown>;
  status: { code?: number; message?: string };
}

/** OTLP/JSON's AnyValue as a plain value. */
type AnyValue = {
  stringValue?: string;
  intValue?: string | number;
  boolValue?: boolean;
  doubleValue?: number;
  arrayValue?: { values?: AnyValue[] };
};
type KeyValue = { key: string; value: AnyValue };

function plain(value: AnyValue): unknown {
  if (value.arrayValue) return (value.arrayValue.values ?? []).map(plain);
  if (value.intValue !== undefined) return Number(value.intValue);
  return value.stringValue ?? value.boolValue ?? value.doubleValue;
}

const attributesOf = (list: KeyValue[] = []) =>
  Object.fromEntries(list.map(({ key, value }) => [key, plain(value)]));

/** An OTLP/HTTP receiver of traces sent as JSON (`POST /v1/traces`), as a collector's port 4318 takes them. */
async function otlpReceiver() {
  const spans: ReceivedSpan[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      if (request.method !== 'POST' || request.url !== '/v1/traces') {
        response.writeHead(404).end();
        return;
      }
      assert.equal(request.headers['content-type'], 'application/json');
      const body = JSON.parse(Buffer.concat(chunks).toString());
      for (const { resource, scopeSpans } of body.resourceSpans ?? []) {
        const service = String(attributesOf(resource?.attributes)['service.name']);
        for (const { spans: received } of scopeSpans ?? []) {
          for (const span of received ?? []) {
            spans.push({
              service,
              traceId: span.traceId,
              spanId: span.spanId,
              parentSpanId: span.parentSpanId || undefined,
              name: span.name,
              attributes: attributesOf(span.attributes),
              status: span.status ?? {},
            });
          }
        }
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    close: () => new Promise((closed) => server.close(closed)),
  };
}

describe('traces', () => {
  it("exports one trace of an object's cycle: the gateway's cycle → its call → the function's handler, and the status write", async (t) => {
    await applyFile(new URL('../../examples/01-minimal/crd.yaml', import.meta.url));
    const namespace = await testNamespace(t);
    const receiver = await otlpReceiver();
    t.after(() => receiver.close());
    const secretFile = join(mkdtempSync(join(tmpdir(), 'causeway-traces-')), 'secret');
    writeFileSync(secretFile, `${SECRET}\n`);
    const { CAUSEWAY_SECRET: _unset, ...withoutSecret } = process.env;
    const exporting = (service: string) => ({
      ...withoutSecret,
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_SERVICE_NAME: service,
      // Exported within a tenth of a second, rather than the default five.
      OTEL_BSP_SCHEDULE_DELAY: '100',
    });

    const { service: functions, url } = await serveOnLoopback(
      t,
      EXAMPLE,
      ['--secret-file', secretFile],
      exporting('kopfexample-functions'),
    );
    const gateway = causeway(
      [
        'gateway',
        '--standalone',
        '--functions',
        `kopfexample=${url}`,
        '--function-scope',
        `kopfexample=${SCOPE}`,
        '--namespace',
        namespace,
        '--secret-file',
        secretFile,
      ],
      exporting('kopfexample-gateway'),
    );
    t.after(() => gateway.stop());
    await gateway.waitFor(/watching .*path=\/apis\/kopf.dev\/v1\/namespaces\//);

    const path = await createKopfExample(namespace, 'traced', { field: 'x' });
    assert.deepEqual(await statusOnceThere(path, 'create_fn'), { message: 'hello traced' });

    const object = `${namespace}/traced`;
    const spanOf = (what: string, test: (span: ReceivedSpan) => boolean) =>
      eventually(what, async () => receiver.spans.find(test));
    const call = await spanOf('the call of create_fn', (span) => {
      const handlers = span.attributes['causeway.handler'];
      return (
        span.service === 'kopfexample-gateway' &&
        span.attributes['causeway.object'] === object &&
        Array.isArray(handlers) &&
        handlers.includes('create_fn')
      );
    });
    const cycle = await spanOf('the cycle that made the call', (span) => span.spanId === call.parentSpanId);
    const handler = await spanOf('the handler span', (span) => span.parentSpanId === call.spanId);
    const statusWrite = await spanOf(
      'the status write',
      (span) =>
        span.parentSpanId === cycle.spanId &&
        span.attributes['http.request.method'] === 'PATCH' &&
        String(span.attributes['url.template']).endsWith('/{name}/status'),
    );

    for (const span of [cycle, handler, statusWrite]) assert.equal(span.traceId, call.traceId, span.name);
    assert.equal(cycle.service, 'kopfexample-gateway');
    assert.equal(cycle.name, 'cycle kopfexamples.kopf.dev');
    assert.equal(cycle.parentSpanId, undefined, 'the cycle starts the trace');
    assert.deepEqual(
      {
        object: cycle.attributes['causeway.object'],
        namespace: cycle.attributes['k8s.namespace.name'],
        cause: cycle.attributes['causeway.cause'],
      },
      { object, namespace, cause: 'create' },
    );
    assert.equal(call.name, `POST ${PATHS.invoke}`);
    assert.deepEqual(
      {
        method: call.attributes['http.request.method'],
        server: call.attributes['server.address'],
        status: call.attributes['http.response.status_code'],
        service: call.attributes['causeway.service'],
        cause: call.attributes['causeway.cause'],
      },
      { method: 'POST', server: '127.0.0.1', status: 200, service: 'kopfexample', cause: 'create' },
    );
    assert.equal(
      handler.service,
      'kopfexample-functions',
      'the handler span comes from the function service',
    );
    assert.equal(handler.name, 'handler create_fn');
    assert.deepEqual(
      {
        handler: handler.attributes['causeway.handler'],
        outcome: handler.attributes['causeway.outcome'],
        object: handler.attributes['causeway.object'],
      },
      { handler: 'create_fn', outcome: 'success', object },
    );
    assert.equal(statusWrite.service, 'kopfexample-gateway');
    assert.equal(statusWrite.attributes['http.response.status_code'], 200);
    assert.equal(statusWrite.attributes['k8s.namespace.name'], namespace);

    assert.equal(await gateway.stop(), 0, 'the gateway exits cleanly on SIGTERM');
    assert.equal(await functions.stop(), 0, 'the function service exits cleanly on SIGTERM');
  });
});
