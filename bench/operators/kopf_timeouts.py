"""bench/faults.ts --kopf-timeouts: loaded beside kopf_crash.py (`kopf run kopf_crash.py kopf_timeouts.py`),
sets the watch timeouts Kopf's documentation names for watches that go silent (`settings.watching`,
docs/configuration.rst "API timeouts"; the workaround of nolar/kopf#585). Its defaults leave all three
unset (None); 1.44+ adds `inactivity_timeout`, 70 s by default, which stays as it is."""
import kopf


@kopf.on.startup()
async def watch_timeouts(settings: kopf.OperatorSettings, **_):
    settings.watching.server_timeout = 60  # sent as timeoutSeconds: the apiserver ends each watch after it
    settings.watching.client_timeout = 70  # aiohttp's total for one watch request, a little past the server's
    settings.watching.connect_timeout = 10
