/**
 * The rule of calls under peering, for the tests of it: each object called once, unless the gateway
 * that called it then refused itself the write of the call's result (docs/peering.md).
 */
import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';

/** A handler's call, as the tests' operators record it: by which gateway, of which object, when (epoch ms). */
export interface Call {
  gateway: string;
  name: string;
  started: number;
  ended: number;
}

/** Each gateway's log lines, by its id. */
export type Logs = ReadonlyMap<string, { lines: string[] }>;

/**
 * When each gateway refused itself a write, by object (epoch ms), read from its log: a write of a
 * gateway whose Lease renewal is 10 s overdue, or that no longer leads, is not made (FencedOut in
 * peering.ts), and the reactor or the timers log it with the object's name.
 */
function fencedWrites(logs: Logs): Map<string, Map<string, number[]>> {
  const fenced = new Map<string, Map<string, number[]>>();
  for (const [id, { lines }] of logs) {
    const byName = new Map<string, number[]>();
    for (const line of lines) {
      const name = /\[[^\]/]+\/([^\]]+)\] .*the write is not made/.exec(line)?.[1];
      if (name === undefined) continue;
      byName.set(name, [...(byName.get(name) ?? []), Date.parse(line.slice(0, line.indexOf(' ')))]);
    }
    fenced.set(id, byName);
  }
  return fenced;
}

/**
 * Each object called once, but where the gateway that called it first then refused itself the write
 * of that call's result (its Lease renewal overdue to the deadline: a starved machine). The object is
 * then called again, by whoever handles it next, the same gateway once it renews: at least once,
 * never written twice (docs/peering.md). Nothing else explains a second call.
 */
export function assertCalledOnceButAfterFencedWrites(
  calls: readonly Call[],
  logs: Logs,
  t: TestContext,
): void {
  const fenced = fencedWrites(logs);
  const twice = [...Map.groupBy(calls, (call) => call.name)].filter(([, ofName]) => ofName.length > 1);
  const unexplained = twice.filter(([name, ofName]) => {
    const first = ofName.toSorted((a, b) => a.started - b.started)[0] as Call;
    return !(fenced.get(first.gateway)?.get(name) ?? []).some((at) => at >= first.started);
  });
  const refused = [...fenced].map(([id, byName]) => `${id} ${byName.size}`).join(', ');
  t.diagnostic(
    `${twice.length} object(s) called twice; objects with a write refused by the fence: ${refused}`,
  );
  const [, ofFirst] = unexplained[0] ?? [];
  if (ofFirst) {
    // What the first caller said between its call and the next: why it was called again.
    const [first, next] = ofFirst.toSorted((a, b) => a.started - b.started) as [Call, Call];
    const said = (logs.get(first.gateway)?.lines ?? []).filter((line) => {
      const at = Date.parse(line.slice(0, line.indexOf(' ')));
      return at >= first.started && at <= next.started && !line.includes(' DEBUG ');
    });
    t.diagnostic(
      `${first.gateway} between ${first.started} and ${next.started}:\n${said.slice(0, 20).join('')}`,
    );
  }
  assert.deepEqual(
    unexplained.map(
      ([name, ofName]) =>
        `${name}: ${ofName.map((call) => `${call.gateway} ${call.started}-${call.ended}`).join(', ')}`,
    ),
    [],
    'no object was called twice but after its first caller was refused the write of its result',
  );
}
