/**
 * What keeping the gateway's metrics costs per object, measured apart from everything else: the
 * updates the gateway's observers make for one object's create cycle (the queue's add, start and
 * finish; the status write's request; the call to the function service and its handler's outcome),
 * made for many objects in a loop, on a GatewayMetrics as `--metrics` makes one, with a scrape every
 * 10,000 objects (Prometheus scrapes every 15-30 s). Its CPU time per object, set beside the CPU time
 * per object of the backlog benchmark, is the share of the gateway's work that metrics take: a figure
 * the backlog's own runs, noisy by ±10% from run to run, cannot show below a few percent.
 *
 *   npm run bench:metrics-cost -- [--objects 200000] [--resources 1] [--handlers 1]
 */
import { cpuUsage } from 'node:process';
import { parseArgs } from 'node:util';
import { GatewayMetrics } from '../gateway/internals.ts';
import { saveResults } from './common.ts';

const { values } = parseArgs({
  options: {
    objects: { type: 'string', default: '200000' },
    resources: { type: 'string', default: '1' },
    handlers: { type: 'string', default: '1' },
  },
});
const objects = Number(values.objects);
const resources = Array.from({ length: Number(values.resources) }, (_, i) => `kind${i}s.example.com/v1`);
const handlers = Array.from({ length: Number(values.handlers) }, (_, i) => `handler_${i}`);

const metrics = new GatewayMetrics();
const queues = resources.map((name) => {
  const observer = metrics.pipeline(name);
  observer.background({ timers: () => 0, daemons: () => 0 });
  observer.objects({ seen: () => objects, owned: () => objects });
  return observer.queue({ depth: 0, oldestUnhandledSeconds: () => 0 });
});
const outcomes = Object.fromEntries(handlers.map((handler) => [handler, 'success' as const]));

/** One object's create cycle, as the gateway's observers see it. */
function cycle(index: number): void {
  const queue = queues[index % queues.length] as (typeof queues)[number];
  queue.added();
  queue.started(1.5);
  metrics.calls.requested('operator', 200, 3.2);
  metrics.calls.called('operator', 'create', outcomes, 3.2);
  metrics.apiRequest('PATCH', `/apis/example.com/v1/namespaces/default/kind0s/object-${index}/status`, 200);
  queue.finished('success', 8.4);
}

for (let index = 0; index < 20_000; index++) cycle(index); // warm-up
const before = cpuUsage();
const started = performance.now();
for (let index = 0; index < objects; index++) {
  cycle(index);
  if (index % 10_000 === 0) await metrics.text();
}
const cpu = cpuUsage(before);
const cpuMicrosPerObject = (cpu.user + cpu.system) / objects;
const wallMicrosPerObject = ((performance.now() - started) * 1000) / objects;
console.log(
  `${objects} objects, ${resources.length} resource(s), ${handlers.length} handler(s) per call: ` +
    `${cpuMicrosPerObject.toFixed(2)} µs of CPU per object (${wallMicrosPerObject.toFixed(2)} µs wall)`,
);
await saveResults('metrics-cost', {
  objects,
  resources: resources.length,
  handlers: handlers.length,
  cpuMicrosPerObject,
  wallMicrosPerObject,
});
