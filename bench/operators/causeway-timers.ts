/**
 * The timers benchmark's Causeway side (bench/timers.ts): a timer on every KopfExample, every
 * $BENCH_INTERVAL seconds, returning the same result each time (so it is written once); and, unless
 * $BENCH_INDEX is 0, a function index of the objects' names by namespace, which the timer reads.
 * Equivalent to kopf_timers.py.
 *
 * Its calls are counted in memory, and at most once a second (from a call, so nothing runs between
 * calls) the counts are written whole to $BENCH_STATS (a temporary file renamed over it): `at` (epoch
 * ms), `calls`, `objects` called at least once, `twice` (at least twice), the fewest and most calls
 * of one object, and the smallest and the last size of the namespace's entry in the index that a call
 * saw (-1 without the index).
 */
import { renameSync, writeFileSync } from 'node:fs';
import { type Index, operator } from 'causeway/functions';

const path = process.env.BENCH_STATS ?? '';
if (!path) throw new Error('BENCH_STATS must name the file the call counts are written to');
const interval = Number(process.env.BENCH_INTERVAL ?? '10');
const withIndex = process.env.BENCH_INDEX !== '0';

const counts = new Map<string, number>();
let calls = 0;
let twice = 0;
let indexMin: number | undefined;
let indexLast: number | undefined;
let dumped = 0;

function record(name: string, indexSize: number): void {
  const count = (counts.get(name) ?? 0) + 1;
  counts.set(name, count);
  calls++;
  if (count === 2) twice++;
  indexMin = indexMin === undefined ? indexSize : Math.min(indexMin, indexSize);
  indexLast = indexSize;
  const now = Date.now();
  if (now - dumped < 1000) return;
  dumped = now;
  let min = Number.POSITIVE_INFINITY;
  let max = 0;
  for (const value of counts.values()) {
    if (value < min) min = value;
    if (value > max) max = value;
  }
  const stats = { at: now, calls, objects: counts.size, twice, min, max, indexMin, indexLast };
  writeFileSync(`${path}.tmp`, JSON.stringify(stats));
  renameSync(`${path}.tmp`, path);
}

const op = operator({ name: 'bench' });

if (withIndex) {
  op.index('kopfexamples', function by_namespace({ namespace, name }) {
    return { [namespace ?? '']: name };
  });
}

op.on.timer(
  'kopfexamples',
  { interval, ...(withIndex ? { indexes: ['by_namespace'] } : {}) },
  async function tick({ name, namespace, indexes }) {
    const byNamespace = indexes.by_namespace as Index<string> | undefined;
    record(name, byNamespace ? (byNamespace.get(namespace ?? '')?.length ?? 0) : -1);
    return { message: 'ticking' };
  },
);

export default op;
