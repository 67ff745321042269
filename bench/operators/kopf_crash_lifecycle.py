"""The lifecycle crash benchmark's Kopf side (bench/crash-lifecycle.ts): create, update and delete
handlers (the delete handler makes Kopf hold each object with its finalizer until it has run), each
taking $BENCH_HANDLER_MS as a call to another system would, so that kills find calls in flight. Each
call is recorded as one line appended to $BENCH_CALL_LOG, when it starts:
`<epoch ms> <handler>/<name> <uid>:<retry> <retry>` (Kopf has no idempotency key). Equivalent to
causeway-crash-lifecycle.ts. `async def`: Kopf runs plain `def` handlers in a thread pool."""
import asyncio
import os
import time

import kopf

# O_APPEND: one write of one short line lands whole, after the others, even if the process dies.
LOG = os.open(os.environ['BENCH_CALL_LOG'], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
HANDLER_S = float(os.environ.get('BENCH_HANDLER_MS', '0')) / 1000


def record(handler, name, uid, retry):
    os.write(LOG, f'{round(time.time() * 1000)} {handler}/{name} {uid}:{retry} {retry}\n'.encode())


@kopf.on.create('kopfexamples')
async def create_fn(name, uid, retry, **_):
    record('create', name, uid, retry)
    await asyncio.sleep(HANDLER_S)
    return {'message': f'created {name}'}


# Its result names the field it saw: the bench checks that it is the field as last changed.
@kopf.on.update('kopfexamples')
async def update_fn(name, uid, retry, spec, **_):
    record('update', name, uid, retry)
    await asyncio.sleep(HANDLER_S)
    return {'field': str(spec.get('field'))}


@kopf.on.delete('kopfexamples')
async def delete_fn(name, uid, retry, **_):
    record('delete', name, uid, retry)
    await asyncio.sleep(HANDLER_S)
