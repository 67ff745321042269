"""The API-writes benchmark's Kopf side (bench/writes.ts): create, update and delete handlers, each
returning a result. Equivalent to causeway-lifecycle.ts."""
import kopf


@kopf.on.create('kopfexamples')
def create_fn(name, **_):
    return {'message': f'created {name}'}


@kopf.on.update('kopfexamples')
def update_fn(name, **_):
    return {'message': f'updated {name}'}


@kopf.on.delete('kopfexamples')
def delete_fn(name, **_):
    return {'message': f'deleted {name}'}
