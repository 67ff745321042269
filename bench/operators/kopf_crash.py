"""The crash benchmark's Kopf side (bench/crash.ts): the create handler of kopf_operator.py, which also
records each call as one line appended to $BENCH_CALL_LOG: `<epoch ms> <name> <uid>:<retry> <retry>`
(Kopf has no idempotency key). Equivalent to causeway-crash.ts.
`async def`: Kopf runs plain `def` handlers in a thread pool, which is slower."""
import os
import time

import kopf

# O_APPEND: one write of one short line lands whole, after the others, even if the process dies.
LOG = os.open(os.environ['BENCH_CALL_LOG'], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)


@kopf.on.create('kopfexamples')
async def create_fn(name, uid, retry, **_):
    os.write(LOG, f'{round(time.time() * 1000)} {name} {uid}:{retry} {retry}\n'.encode())
    return {'message': f'hello {name}'}
