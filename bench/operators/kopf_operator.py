"""The benchmark's baseline: Kopf with one create handler, equivalent to causeway-operator.ts."""
import kopf


@kopf.on.create('kopfexamples')
def create_fn(name, **_):
    return {'message': f'hello {name}'}
