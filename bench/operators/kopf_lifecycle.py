"""The API-writes benchmark's Kopf side (bench/writes.ts): create, update and delete handlers, each
returning a result. Equivalent to causeway-lifecycle.ts.
`async def`: Kopf runs plain `def` handlers in a thread pool, which is slower."""
import kopf


@kopf.on.create('kopfexamples')
async def create_fn(name, **_):
    return {'message': f'created {name}'}


@kopf.on.update('kopfexamples')
async def update_fn(name, **_):
    return {'message': f'updated {name}'}


@kopf.on.delete('kopfexamples')
async def delete_fn(name, **_):
    return {'message': f'deleted {name}'}
