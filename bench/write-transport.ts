/**
 * What the gateway's choice to send writes over HTTP/1.1 costs in CPU (see ApiConnections.writes in
 * gateway/kube/liveness.ts): the same merge patches of ConfigMaps, at the same concurrency, sent by one
 * process over the dispatchers a KubeClient gets, `writes` (HTTP/1.1, kept alive: what the gateway
 * uses) against `requests` (HTTP/2: the baseline, what writes used before), to a fresh control plane.
 * Rounds alternate between the two, so that the apiserver's warming and the machine's drift fall on
 * both; each round's CPU is the process's own (process.cpuUsage), its client side only.
 *
 *   npm run bench:write-transport -- [--writes 2000] [--concurrency 16] [--rounds 3]
 */
import { parseArgs } from 'node:util';
import { request } from 'undici';
import { ApiConnections } from '../gateway/internals.ts';
import { createNamespace, median, saveResults, say, table, withCluster } from './common.ts';

type Transport = 'http1.1' | 'h2';

interface Round {
  transport: Transport;
  writes: number;
  seconds: number;
  cpuSeconds: number;
  cpuMsPerWrite: number;
  writesPerSecond: number;
}

const { values } = parseArgs({
  options: {
    writes: { type: 'string', default: '2000' },
    concurrency: { type: 'string', default: '16' },
    rounds: { type: 'string', default: '3' },
  },
});
const writes = Number(values.writes);
const concurrency = Number(values.concurrency);
const rounds = Number(values.rounds);
const MAPS = 200;

await withCluster(async ({ controlPlane, client }) => {
  const namespace = 'write-transport';
  await createNamespace(client, namespace);
  const collection = `/api/v1/namespaces/${namespace}/configmaps`;
  for (let index = 0; index < MAPS; index++) {
    await client.request(collection, {
      method: 'POST',
      body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `map-${index}` }, data: {} },
    });
  }
  const connections = new ApiConnections(
    controlPlane.server,
    { type: 'agent', connect: { ca: controlPlane.caPem } },
    undefined,
  );
  const headers = {
    authorization: `Bearer ${controlPlane.token}`,
    accept: 'application/json',
    'content-type': 'application/merge-patch+json',
  };
  const dispatcherOf = (transport: Transport) =>
    transport === 'h2' ? connections.requests : connections.writes;

  const patchAll = async (transport: Transport, count: number, round: number): Promise<void> => {
    let next = 0;
    const worker = async () => {
      for (let index = next++; index < count; index = next++) {
        const response = await request(`${controlPlane.server}${collection}/map-${index % MAPS}`, {
          method: 'PATCH',
          headers,
          body: JSON.stringify({ data: { round: String(round), write: String(index) } }),
          dispatcher: dispatcherOf(transport),
        });
        const body = await response.body.text();
        if (response.statusCode !== 200) throw new Error(`PATCH answered ${response.statusCode}: ${body}`);
      }
    };
    await Promise.all(Array.from({ length: concurrency }, worker));
  };

  say(`write transport: ${writes} merge patches a round, ${concurrency} at a time, ${rounds} rounds each`);
  // Connections opened and both paths warm before anything is measured.
  await patchAll('http1.1', 200, -1);
  await patchAll('h2', 200, -1);
  const results: Round[] = [];
  for (let round = 0; round < rounds; round++) {
    for (const transport of ['http1.1', 'h2'] as const) {
      const cpu = process.cpuUsage();
      const started = performance.now();
      await patchAll(transport, writes, round);
      const seconds = (performance.now() - started) / 1000;
      const used = process.cpuUsage(cpu);
      const cpuSeconds = (used.user + used.system) / 1e6;
      const result = {
        transport,
        writes,
        seconds: Number(seconds.toFixed(2)),
        cpuSeconds: Number(cpuSeconds.toFixed(3)),
        cpuMsPerWrite: Number(((cpuSeconds * 1000) / writes).toFixed(3)),
        writesPerSecond: Math.round(writes / seconds),
      };
      results.push(result);
      say(
        `  round ${round + 1}, ${transport}: ${result.cpuMsPerWrite} ms of CPU a write, ${result.writesPerSecond}/s`,
      );
    }
  }
  await Promise.all([connections.requests.close(), connections.writes.close(), connections.watches.close()]);

  const medianOf = (transport: Transport, key: 'cpuMsPerWrite' | 'writesPerSecond') =>
    median(results.filter((result) => result.transport === transport).map((result) => result[key]));
  const summary = {
    http11CpuMsPerWrite: medianOf('http1.1', 'cpuMsPerWrite'),
    h2CpuMsPerWrite: medianOf('h2', 'cpuMsPerWrite'),
    http11WritesPerSecond: medianOf('http1.1', 'writesPerSecond'),
    h2WritesPerSecond: medianOf('h2', 'writesPerSecond'),
  };
  say('');
  for (const line of table(
    ['', 'HTTP/1.1 (the gateway)', 'HTTP/2 (baseline)', 'ratio'],
    [
      [
        'CPU a write, median round',
        `${summary.http11CpuMsPerWrite} ms`,
        `${summary.h2CpuMsPerWrite} ms`,
        (summary.http11CpuMsPerWrite / summary.h2CpuMsPerWrite).toFixed(2),
      ],
      [
        'writes a second, median round',
        String(summary.http11WritesPerSecond),
        String(summary.h2WritesPerSecond),
        (summary.http11WritesPerSecond / summary.h2WritesPerSecond).toFixed(2),
      ],
    ],
  ))
    say(line);
  await saveResults('write-transport', { writes, concurrency, summary, rounds: results });
});
