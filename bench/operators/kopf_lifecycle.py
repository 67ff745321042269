"""The API-writes benchmark's Kopf side (bench/writes.ts): create and update handlers returning a
result, and a delete handler that returns one when $BENCH_DELETE_RETURNS is `result` and nothing when
it is `nothing`. Equivalent to causeway-lifecycle.ts.
`async def`: Kopf runs plain `def` handlers in a thread pool, which is slower."""
import os

import kopf

DELETE_RETURNS = os.environ.get('BENCH_DELETE_RETURNS')
if DELETE_RETURNS not in ('result', 'nothing'):
    raise RuntimeError('BENCH_DELETE_RETURNS must be "result" or "nothing"')


@kopf.on.create('kopfexamples')
async def create_fn(name, **_):
    return {'message': f'created {name}'}


@kopf.on.update('kopfexamples')
async def update_fn(name, **_):
    return {'message': f'updated {name}'}


if DELETE_RETURNS == 'result':
    @kopf.on.delete('kopfexamples')
    async def delete_fn(name, **_):
        return {'message': f'deleted {name}'}
else:
    @kopf.on.delete('kopfexamples')
    async def delete_fn(**_):
        pass
