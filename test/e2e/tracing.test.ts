/**
 * A cause can be followed across the gateway and the function service: each call carries a W3C
 * trace context (the `traceparent` header, and signed in the body), the handler sees it as `trace`,
 * and the gateway logs the handler's lines with the same trace id.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { operator } from '../../functions/index.ts';
import { testNamespace } from '../support/cluster.ts';
import {
  applyFile,
  createKopfExample,
  memoryLogger,
  runOperator,
  statusOnceThere,
  TEST_SECRET,
} from '../support/operator.ts';

const CRD = new URL('../../examples/01-minimal/crd.yaml', import.meta.url);

describe('tracing', () => {
  it("carries the gateway's trace context to the handler, and logs the handler's lines with its id", async (t) => {
    await applyFile(CRD);
    const namespace = await testNamespace(t);
    const op = operator({ name: 'traced', secret: TEST_SECRET });
    op.on.create('kopfexamples', function create_fn({ trace, logger }) {
      logger.info('creating');
      return { ...trace };
    });
    const headers: string[] = [];
    const logger = memoryLogger();
    const running = await runOperator(
      {
        name: op.name,
        fetch: (request: Request) => {
          if (request.method === 'POST') headers.push(request.headers.get('traceparent') ?? '(none)');
          return op.fetch(request);
        },
      },
      { namespaces: [namespace], logger },
    );
    t.after(() => running.stop());

    const path = await createKopfExample(namespace, 'traced', {});
    const trace = (await statusOnceThere(path, 'create_fn')) as {
      traceparent: string;
      traceId: string;
      spanId: string;
    };
    assert.match(trace.traceparent, /^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    assert.equal(trace.traceparent, `00-${trace.traceId}-${trace.spanId}-01`);
    assert.deepEqual(headers, [trace.traceparent], 'the same context in the header');
    assert.ok(
      logger.lines.some(
        (line) =>
          line.includes(`[${namespace}/traced] creating `) &&
          line.includes(` handler=create_fn traceId=${trace.traceId} `),
      ),
      "the handler's line, with the trace id",
    );
  });
});
