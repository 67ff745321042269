"""bench/faults.ts --kopf-timeouts: loaded beside kopf_crash.py (`kopf run kopf_crash.py kopf_timeouts.py`),
sets Kopf's watch timeouts (`settings.watching`), the workaround of nolar/kopf#585 for watches that go
silent, with values of the benchmark's choosing. Kopf's defaults leave all three unset (None); 1.44+
adds `inactivity_timeout`, 70 s by default, which stays as it is."""
import kopf


@kopf.on.startup()
async def watch_timeouts(settings: kopf.OperatorSettings, **_):
    settings.watching.server_timeout = 60  # sent as timeoutSeconds: the apiserver ends each watch after it
    settings.watching.client_timeout = 70  # aiohttp's total for one watch request, a little past the server's
    settings.watching.connect_timeout = 10
