"""The timers benchmark's Kopf side (bench/timers.ts): a timer on every KopfExample, every
$BENCH_INTERVAL seconds, returning the same result each time; and, unless $BENCH_INDEX is 0, an index
of the objects' names by namespace, which the timer reads (as a kwarg named after the index).
Equivalent to causeway-timers.ts, and counting its calls the same way: in memory, written whole to
$BENCH_STATS at most once a second, from a call.
`async def`: Kopf runs plain `def` handlers in a thread pool, which is slower."""
import json
import os
import time

import kopf

STATS = os.environ['BENCH_STATS']
INTERVAL = float(os.environ.get('BENCH_INTERVAL', '10'))
WITH_INDEX = os.environ.get('BENCH_INDEX', '1') != '0'

counts = {}
state = {'calls': 0, 'twice': 0, 'index_min': None, 'index_last': None, 'dumped': 0.0}


def record(name, index_size):
    count = counts.get(name, 0) + 1
    counts[name] = count
    state['calls'] += 1
    if count == 2:
        state['twice'] += 1
    state['index_min'] = index_size if state['index_min'] is None else min(state['index_min'], index_size)
    state['index_last'] = index_size
    now = time.time()
    if now - state['dumped'] < 1:
        return
    state['dumped'] = now
    values = counts.values()
    stats = {
        'at': round(now * 1000),
        'calls': state['calls'],
        'objects': len(counts),
        'twice': state['twice'],
        'min': min(values),
        'max': max(values),
        'indexMin': state['index_min'],
        'indexLast': state['index_last'],
    }
    with open(STATS + '.tmp', 'w') as file:
        json.dump(stats, file)
    os.replace(STATS + '.tmp', STATS)


if WITH_INDEX:
    @kopf.index('kopfexamples')
    async def by_namespace(namespace, name, **_):
        return {namespace: name}

    @kopf.timer('kopfexamples', interval=INTERVAL)
    async def tick(name, namespace, by_namespace: kopf.Index, **_):
        record(name, len(by_namespace.get(namespace, ())))
        return {'message': 'ticking'}
else:
    @kopf.timer('kopfexamples', interval=INTERVAL)
    async def tick(name, **_):
        record(name, -1)
        return {'message': 'ticking'}
