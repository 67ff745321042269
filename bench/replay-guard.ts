/**
 * What a function service's ReplayGuard keeps at a steady call rate: the ids it remembers and the heap
 * they take, after a minute of calls whose tokens live 30 s (the gateway's), capped at the default
 * and uncapped (as it was before the cap). The clock is simulated: a minute of calls takes a moment.
 *
 *   npm run bench:replay-guard -- [--rates 100,1000,10000]
 */

import { parseArgs } from 'node:util';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { DEFAULT_MAX_REPLAY_IDS, ReplayGuard } from '../protocol/index.ts';
import { saveResults, say, table } from './common.ts';

const { values } = parseArgs({ options: { rates: { type: 'string', default: '100,1000,10000' } } });
const RATES = values.rates.split(',').map(Number);
const TOKEN_SECONDS = 30;
const RUN_SECONDS = 60;

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

interface Result {
  callsPerSecond: number;
  cap: number | 'none';
  idsKept: number;
  /** Genuine calls refused: their tokens expire no later than an id the guard forgot. */
  refused: number;
  heapMiB: number;
}

/** One minute of calls at `rate` through a guard, and what it holds at the end. */
function measure(rate: number, maxIds: number | undefined): Result {
  gc();
  const before = process.memoryUsage().heapUsed;
  const clock = { now: 0 };
  const guard = new ReplayGuard({ now: () => clock.now, maxIds: maxIds ?? Number.MAX_SAFE_INTEGER });
  const start = Math.floor(Date.now() / 1000);
  let refused = 0;
  for (let call = 0; call < rate * RUN_SECONDS; call++) {
    clock.now = start + call / rate;
    // Parsed from JSON, as a service reads it from the token: a flat string (randomUUID's are not).
    const jti = JSON.parse(`"${crypto.randomUUID()}"`) as string;
    if (!guard.admit(jti, Math.floor(clock.now) + TOKEN_SECONDS)) refused++;
  }
  gc();
  const heapMiB = (process.memoryUsage().heapUsed - before) / 2 ** 20;
  return { callsPerSecond: rate, cap: maxIds ?? 'none', idsKept: guard.size, refused, heapMiB };
}

const results = RATES.flatMap((rate) => [measure(rate, undefined), measure(rate, DEFAULT_MAX_REPLAY_IDS)]);
for (const line of table(
  ['calls/s', 'cap', 'ids kept', 'heap', 'refused'],
  results.map((result) => [
    String(result.callsPerSecond),
    String(result.cap),
    String(result.idsKept),
    `${result.heapMiB.toFixed(1)} MiB`,
    String(result.refused),
  ]),
))
  say(line);
await saveResults('replay-guard', { tokenSeconds: TOKEN_SECONDS, runSeconds: RUN_SECONDS, results });
