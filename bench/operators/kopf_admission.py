"""The admission benchmark's Kopf side (bench/admission.ts): one validating handler that allows
everything, served by Kopf's WebhookServer on $BENCH_WEBHOOK_PORT. Plain HTTP: Kopf makes its own
certificate only with the `dev` extra, which its users install for development only."""
import os

import kopf


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_):
    settings.admission.server = kopf.WebhookServer(
        addr='127.0.0.1', port=int(os.environ['BENCH_WEBHOOK_PORT']), insecure=True,
    )


@kopf.on.validate('kopfexamples')
async def allow(**_):
    pass
