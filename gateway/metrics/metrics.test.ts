import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { Budgets } from '../dispatch/budget.ts';
import { CATALOGUE, SERVICE_CATALOGUE } from './catalogue.ts';
import { dashboard } from './dashboard.ts';
import { metricsAddress } from './endpoint.ts';
import { GatewayMetrics, MAX_HANDLER_LABELS, OTHER_HANDLERS, subresourceOf } from './metrics.ts';
import { ServiceMetrics } from './service-metrics.ts';

/** The main thread's CPU time so far, in ms. */
function threadCpuMs(): number {
  const { user, system } = process.threadCpuUsage();
  return (user + system) / 1000;
}

describe('GatewayMetrics', () => {
  it('exports every metric of the catalogue, with its type and help, before anything happened', async () => {
    const text = (await new GatewayMetrics().text()).body;
    for (const spec of CATALOGUE) {
      assert.ok(text.includes(`# TYPE ${spec.name} ${spec.type}\n`), `${spec.name} as a ${spec.type}`);
      assert.ok(text.includes(`# HELP ${spec.name} `), `${spec.name} with its help`);
    }
  });

  it('keeps each gateway apart: a second one counts from zero', async () => {
    const first = new GatewayMetrics();
    first.apiRequest('PATCH', '/apis/kopf.dev/v1/namespaces/ns/kopfexamples/a/status', 200);
    const second = new GatewayMetrics();
    assert.match((await first.text()).body, /^rest_client_requests_total\{code="200",method="PATCH"\} 1$/m);
    assert.doesNotMatch((await second.text()).body, /^rest_client_requests_total\{/m);
  });

  it("reads the event loop's delay since the previous scrape, and the heap in use", async (t) => {
    const metrics = new GatewayMetrics();
    const lagOf = async () =>
      Number(/^nodejs_eventloop_lag_p99_seconds (\S+)$/m.exec((await metrics.text()).body)?.[1]);
    metrics.eventLoop.start();
    t.after(() => metrics.eventLoop.stop());
    await lagOf();
    const pause = (ms: number) => new Promise((settle) => setTimeout(settle, ms));
    // A few samples after the scrape, the loop blocked for 500 ms, then free again: one sample late by
    // some 490 ms, which the next scrape no longer counts (a busy machine may delay this process by
    // some tens of milliseconds, not 400).
    await pause(30);
    const blockedUntil = performance.now() + 500;
    while (performance.now() < blockedUntil);
    await pause(50);
    assert.ok((await lagOf()) > 0.4, 'the blocked loop seen');
    await pause(100);
    assert.ok((await lagOf()) < 0.4, 'forgotten at the next scrape');
    const heap = Number(/^nodejs_heap_size_used_bytes (\S+)$/m.exec((await metrics.text()).body)?.[1]);
    assert.ok(heap > 1e6, `${heap} bytes in use`);
  });

  it("serves the event loop's delay, and the gateway's own part of it, as histograms while it samples", async () => {
    /** Runs no later than `le` seconds, or all of them. */
    const count = (body: string, name: string, le?: string) =>
      Number(new RegExp(`^${name}${le ? `_bucket\\{le="${le}"\\}` : '_count'} (\\S+)$`, 'm').exec(body)?.[1]);
    const metrics = new GatewayMetrics();
    metrics.eventLoop.start();
    try {
      await new Promise((settle) => setTimeout(settle, 50));
      // 300 ms of the thread's own CPU time, however long a loaded machine makes it wait for a CPU.
      const busyUntil = threadCpuMs() + 300;
      while (threadCpuMs() < busyUntil);
      await new Promise((settle) => setTimeout(settle, 50));
    } finally {
      await metrics.eventLoop.stop();
    }
    const { body } = await metrics.text();
    for (const name of ['causeway_eventloop_delay_seconds', 'causeway_eventloop_own_delay_seconds']) {
      const all = count(body, name);
      // The 300 ms of work stand for some 14 runs late by 20 ms to 280 ms.
      assert.ok(all - count(body, name, '0.1') >= 5, `${name}: ${body}`);
      assert.ok(count(body, name, '0.05') > 0, `${name}: runs about on time around the pause`);
    }
  });

  it("serves no own delay where the main thread's CPU time cannot be read (Node before 23.9)", async () => {
    const { body } = await new GatewayMetrics(null).text();
    assert.match(body, /^# TYPE causeway_eventloop_delay_seconds histogram$/m);
    assert.doesNotMatch(body, /causeway_eventloop_own_delay_seconds/);
  });

  it("reads each service's budgets when scraped, and counts their waits by service and budget", async () => {
    const metrics = new GatewayMetrics();
    const budgets = new Budgets(
      {
        maxReplyBytes: 100,
        replyBytesPerService: 100,
        concurrencyPerService: 2,
        daemonsPerService: 3,
        indexBytesPerService: 50,
      },
      metrics.budgetWaited,
    );
    metrics.watchBudgets(() => budgets.readings(['hungry']));
    const { replyBytes } = budgets.of('hungry');
    await replyBytes.acquire(80);
    const waiting = replyBytes.acquire(30);
    const { body } = await metrics.text();
    assert.match(body, /^causeway_function_budget_used\{service="hungry",budget="reply_bytes"\} 80$/m);
    assert.match(body, /^causeway_function_budget_limit\{service="hungry",budget="daemons"\} 3$/m);
    assert.match(body, /^causeway_function_budget_waits_total\{service="hungry",budget="reply_bytes"\} 1$/m);
    replyBytes.release(80);
    await waiting;
  });

  it('counts API writes that succeeded by verb and subresource, and every request by its status', async () => {
    const metrics = new GatewayMetrics();
    metrics.apiRequest('PATCH', '/apis/kopf.dev/v1/namespaces/ns/kopfexamples/a/status', 200);
    metrics.apiRequest('PATCH', '/apis/kopf.dev/v1/namespaces/ns/kopfexamples/a', 409);
    metrics.apiRequest('POST', '/api/v1/namespaces/ns/events', 201);
    metrics.apiRequest('GET', '/apis/kopf.dev/v1/kopfexamples', undefined);
    const { body } = await metrics.text();
    assert.match(body, /^causeway_api_writes_total\{verb="PATCH",subresource="status"\} 1$/m);
    assert.match(body, /^causeway_api_writes_total\{verb="POST",subresource=""\} 1$/m);
    assert.doesNotMatch(body, /^causeway_api_writes_total\{verb="PATCH",subresource=""\}/m, 'not the 409');
    assert.match(body, /^rest_client_requests_total\{code="409",method="PATCH"\} 1$/m);
    assert.match(body, /^rest_client_requests_total\{code="<error>",method="GET"\} 1$/m);
  });

  it("reads a queue's depth and its oldest change waiting when scraped, a service's circuit, leadership", async () => {
    const metrics = new GatewayMetrics();
    let depth = 3;
    metrics.queue('kopfexamples.kopf.dev/v1', {
      get depth() {
        return depth;
      },
      oldestUnhandledSeconds: () => depth * 10,
    });
    let leads = false;
    metrics.watchLeading('causeway.dev', () => leads);
    metrics.watchBreakers(() => [
      ['up', false],
      ['down', true],
    ]);
    const before = (await metrics.text()).body;
    assert.match(before, /^workqueue_depth\{name="kopfexamples.kopf.dev\/v1"\} 3$/m);
    assert.match(before, /^causeway_oldest_unhandled_seconds\{resource="kopfexamples.kopf.dev\/v1"\} 30$/m);
    assert.match(before, /^leader_election_master_status\{name="causeway.dev"\} 0$/m);
    depth = 0;
    leads = true;
    const { body } = await metrics.text();
    assert.match(body, /^workqueue_depth\{name="kopfexamples.kopf.dev\/v1"\} 0$/m);
    assert.match(body, /^causeway_oldest_unhandled_seconds\{resource="kopfexamples.kopf.dev\/v1"\} 0$/m);
    assert.match(body, /^leader_election_master_status\{name="causeway.dev"\} 1$/m);
    assert.match(body, /^causeway_function_breaker_open\{service="down"\} 1$/m);
    assert.match(body, /^causeway_function_breaker_open\{service="up"\} 0$/m);
  });

  it('reads 1 for a function service while it is refused, 0 once served again', async () => {
    const metrics = new GatewayMetrics();
    let readings: [string, boolean][] = [['greedy', true]];
    metrics.watchRefusals(() => readings);
    assert.match((await metrics.text()).body, /^causeway_function_service_refused\{service="greedy"\} 1$/m);
    readings = [['greedy', false]];
    assert.match((await metrics.text()).body, /^causeway_function_service_refused\{service="greedy"\} 0$/m);
  });

  it("labels a service's handlers by id up to a bound, and counts those beyond it as other", async () => {
    const metrics = new GatewayMetrics();
    for (let index = 0; index < MAX_HANDLER_LABELS + 5; index++) {
      metrics.calls.called('flipping', 'create', { [`h${index}`]: 'success' }, 1);
    }
    metrics.calls.called('flipping', 'create', { h0: 'success' }, 1); // one already labelled keeps its label
    metrics.calls.called('steady', 'create', { create_fn: 'success' }, 1);
    const { body } = await metrics.text();
    const labelled = body.match(
      /^causeway_handler_calls_total\{service="flipping",handler="h\d+"[^}]*\} \d+$/gm,
    );
    assert.equal(labelled?.length, MAX_HANDLER_LABELS);
    assert.match(
      body,
      /^causeway_handler_calls_total\{service="flipping",handler="h0",cause="create",outcome="success"\} 2$/m,
    );
    assert.match(
      body,
      new RegExp(
        `^causeway_handler_calls_total\\{service="flipping",handler="${OTHER_HANDLERS}",cause="create",outcome="success"\\} 5$`,
        'm',
      ),
    );
    assert.match(
      body,
      /^causeway_handler_calls_total\{service="steady",handler="create_fn",cause="create",outcome="success"\} 1$/m,
    );
  });

  it("reads a pipeline's timers and daemons when scraped, and counts its watches' restarts and its services' waits for a share", async () => {
    const metrics = new GatewayMetrics();
    const pipeline = metrics.pipeline('kopfexamples.kopf.dev/v1');
    pipeline.background({ timers: () => 4, daemons: () => 2 });
    pipeline.watchRestarted();
    pipeline.watchRestarted();
    pipeline.shareWaited('slow');
    const { body } = await metrics.text();
    assert.match(
      body,
      /^causeway_function_share_waits_total\{service="slow",resource="kopfexamples.kopf.dev\/v1"\} 1$/m,
    );
    assert.match(body, /^causeway_timers\{resource="kopfexamples.kopf.dev\/v1"\} 4$/m);
    assert.match(body, /^causeway_daemons\{resource="kopfexamples.kopf.dev\/v1"\} 2$/m);
    assert.match(body, /^causeway_watch_restarts_total\{resource="kopfexamples.kopf.dev\/v1"\} 2$/m);
  });

  it("counts a queue's cycles by result, a retry for each that runs again later", async () => {
    const metrics = new GatewayMetrics();
    const queue = metrics.queue('r', { depth: 0, oldestUnhandledSeconds: () => 0 });
    queue.added();
    queue.started(2);
    queue.finished('success', 5);
    queue.finished('requeue_after', 5);
    queue.finished('error', 5);
    const { body } = await metrics.text();
    for (const result of ['success', 'requeue_after', 'error'])
      assert.match(
        body,
        new RegExp(`^controller_runtime_reconcile_total\\{controller="r",result="${result}"\\} 1$`, 'm'),
      );
    assert.match(body, /^workqueue_retries_total\{name="r"\} 2$/m);
    assert.match(body, /^workqueue_adds_total\{name="r"\} 1$/m);
    assert.match(body, /^workqueue_queue_duration_seconds_bucket\{le="0.0025",name="r"\} 1$/m);
  });
});

describe('ServiceMetrics', () => {
  it('counts the answers, the refusals by reason and the handlers run of a function service', async () => {
    const metrics = new ServiceMetrics();
    metrics.answered(200);
    metrics.answered(401);
    metrics.observer.refused('replay');
    metrics.observer.handled('create_fn', 'create', 'success', 3);
    const { body } = await metrics.text();
    assert.match(body, /^causeway_service_requests_total\{code="401"\} 1$/m);
    assert.match(body, /^causeway_service_refused_total\{reason="replay"\} 1$/m);
    assert.match(
      body,
      /^causeway_service_handler_calls_total\{handler="create_fn",cause="create",outcome="success"\} 1$/m,
    );
    assert.match(
      body,
      /^causeway_service_handler_duration_seconds_bucket\{le="0.005",handler="create_fn"\} 1$/m,
    );
  });
});

describe('subresourceOf', () => {
  it('names the subresource of a path, namespaced or not, and none for an object or a collection', () => {
    assert.equal(subresourceOf('/apis/kopf.dev/v1/namespaces/ns/kopfexamples/a/status'), 'status');
    assert.equal(subresourceOf('/apis/kopf.dev/v1/clusterthings/a/status'), 'status');
    assert.equal(subresourceOf('/apis/apps/v1/namespaces/ns/deployments/a/scale?dryRun=All'), 'scale');
    assert.equal(subresourceOf('/apis/kopf.dev/v1/namespaces/ns/kopfexamples/a'), '');
    assert.equal(subresourceOf('/api/v1/namespaces/ns/events'), '');
    assert.equal(subresourceOf('/api/v1/namespaces/ns'), '');
  });
});

describe('metricsAddress', () => {
  it('reads HOST:PORT, [IPv6]:PORT and :PORT (every address)', () => {
    assert.deepEqual(metricsAddress('127.0.0.1:9090'), { host: '127.0.0.1', port: 9090 });
    assert.deepEqual(metricsAddress('[::1]:0'), { host: '::1', port: 0 });
    assert.deepEqual(metricsAddress(':9090'), { host: '0.0.0.0', port: 9090 });
  });

  it('refuses anything else, saying what it takes', () => {
    for (const given of ['9090', 'http://0.0.0.0:9090/metrics', 'host:99999', 'host:'])
      assert.throws(() => metricsAddress(given), /must be HOST:PORT \(such as 0.0.0.0:9090, or :9090\)/);
  });
});

describe('deploy/grafana/causeway.json', () => {
  it('is the dashboard made from the catalogues: a panel per metric, and no other', () => {
    const committed = JSON.parse(
      readFileSync(new URL('../../deploy/grafana/causeway.json', import.meta.url), 'utf8'),
    );
    assert.deepEqual(
      committed,
      dashboard(),
      'write it again: node -e "import(\'./gateway/metrics/dashboard.ts\').then(({ dashboard }) => console.log(JSON.stringify(dashboard(), null, 2)))" > deploy/grafana/causeway.json',
    );
    const panels = committed.panels as { title: string; targets: { expr: string }[] }[];
    assert.deepEqual(
      panels.map((panel) => panel.title),
      [...CATALOGUE, ...SERVICE_CATALOGUE].map((spec) => spec.name),
    );
    for (const { title, targets } of panels)
      for (const { expr } of targets) assert.ok(expr.includes(title), `${title}: ${expr}`);
  });
});

describe('docs/observability.md', () => {
  it('lists every metric of the catalogue, with its type, labels and meaning, and no other', () => {
    const doc = readFileSync(new URL('../../docs/observability.md', import.meta.url), 'utf8');
    const documented = doc
      .split('\n')
      .filter((line) => /^\| `[a-z0-9_]+` \| (counter|gauge|histogram) \|/.test(line));
    const expected = [...CATALOGUE, ...SERVICE_CATALOGUE].map(
      (spec) =>
        `| \`${spec.name}\` | ${spec.type} | ${spec.labels.map((label) => `\`${label}\``).join(', ')} | ${spec.help} |`,
    );
    assert.deepEqual(documented, expected, `the table should read:\n${expected.join('\n')}`);
  });
});
