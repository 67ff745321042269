"""The benchmark's baseline: Kopf with one create handler, equivalent to causeway-operator.ts.
`async def`: Kopf runs plain `def` handlers in a thread pool, which is slower."""
import kopf


@kopf.on.create('kopfexamples')
async def create_fn(name, **_):
    return {'message': f'hello {name}'}
