"""The scale benchmark's Kopf side (bench/scale.ts): create, update and delete handlers, each recording
its call as one line appended to $BENCH_CALL_LOG: `<epoch ms> <handler> <name>`. Equivalent to
causeway-scale.ts.
`async def`: Kopf runs plain `def` handlers in a thread pool, which is slower."""
import os
import time

import kopf

# O_APPEND: one write of one short line lands whole, after the others.
LOG = os.open(os.environ['BENCH_CALL_LOG'], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)


def record(handler, name):
    os.write(LOG, f'{round(time.time() * 1000)} {handler} {name}\n'.encode())


@kopf.on.create('kopfexamples')
async def create_fn(name, **_):
    record('create', name)
    return {'message': f'created {name}'}


@kopf.on.update('kopfexamples')
async def update_fn(name, **_):
    record('update', name)
    return {'message': f'updated {name}'}


@kopf.on.delete('kopfexamples')
async def delete_fn(name, **_):
    record('delete', name)
