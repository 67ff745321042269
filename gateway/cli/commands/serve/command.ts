/** `causeway serve <module>`: the module's function service alone, over HTTP(S), for a gateway deployed elsewhere. */

import { OBSERVED } from '../../../../protocol/index.ts';
import type { FetchHandler } from '../../../dispatch/transport.ts';
import { MetricsEndpoint, metricsAddress } from '../../../metrics/endpoint.ts';
import { ServiceMetrics } from '../../../metrics/service-metrics.ts';
import { startTracing } from '../../../tracing/sdk.ts';
import { command } from '../../command-line.ts';
import { metricsListen, OBSERVABILITY } from '../../flags/observability.ts';
import { loadOperatorModule } from '../../operator-module.ts';
import { untilSignal } from '../../process.ts';
import { provideVerificationKeys } from '../../secret.ts';
import { LISTENING, VERIFYING } from './flags.ts';
import { serveOptions } from './options.ts';
import { serveFetch } from './serve.ts';

export const serveCommand = command({
  name: 'serve',
  arguments: ['module'],
  needs: "the operator module's path, e.g. causeway serve ./operator.ts",
  summary:
    "Serve only the function service of a module over HTTP, for a gateway deployed elsewhere. Needs the gateway's public keys (--jwks-file) or a secret shared with it (--secret-file).",
  groups: [LISTENING, VERIFYING, OBSERVABILITY],
  async run({ args: { module }, values, logger }) {
    const options = serveOptions(values);
    // Where causeway/functions looks for them; refused at start rather than answered with a 500 later.
    const stopFollowing = provideVerificationKeys({
      jwksFile: values['jwks-file'],
      secretFile: values['secret-file'],
    });
    const listen = values.metrics ? metricsAddress(metricsListen(values.metrics)) : undefined;
    // Its handlers' spans continue the gateway's calls (causeway/functions).
    const tracing = await startTracing('causeway-functions', logger);
    const loaded = await loadOperatorModule(module);
    const metrics = listen && new ServiceMetrics();
    const endpoint = metrics && listen && new MetricsEndpoint(metrics, listen, logger);
    await endpoint?.start();
    const server = await serveFetch(metrics ? counted(loaded, metrics) : loaded, { ...options, logger });
    // Before saying where it listens: whoever waits for that may stop it at once, and a signal with no
    // listener yet would end the process there and then.
    const signalled = untilSignal(logger);
    logger.info(`function service listening on ${server.url}`);
    if (process.send) {
      // Started by `causeway dev`, which asks where, and whose end (even by SIGKILL) is this one's.
      process.send({ listening: server.url });
      await Promise.race([signalled, new Promise((resolve) => process.once('disconnect', resolve))]);
    } else {
      await signalled;
    }
    stopFollowing();
    await server.close();
    await endpoint?.stop();
    await tracing?.shutdown();
  },
});

/** The handler with its answers counted, and its operator (if made with causeway/functions) observed. */
function counted(handler: FetchHandler, metrics: ServiceMetrics): FetchHandler {
  (handler as { [OBSERVED]?: (observer: ServiceMetrics['observer']) => void })[OBSERVED]?.(metrics.observer);
  return {
    fetch: async (request) => {
      const response = await handler.fetch(request);
      metrics.answered(response.status);
      return response;
    },
  };
}
