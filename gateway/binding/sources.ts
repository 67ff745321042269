/**
 * Reading the handlers from where the gateway gets them (an operator module in this process, services
 * over HTTP, or the FunctionService objects of a namespace), connected as the gateway connects them:
 * for the commands that judge what a gateway serves without running one (explain, rbac).
 */
import type { KubernetesObject } from '../../protocol/index.ts';
import { FunctionService } from '../dispatch/function-service.ts';
import type { FunctionEndpoint } from '../dispatch/services.ts';
import { hmacSigner, type Signer } from '../dispatch/signer.ts';
import { type FetchHandler, httpTransport, inProcessTransport } from '../dispatch/transport.ts';
import type { KubeClient } from '../kube/client.ts';
import { functionServiceEndpoint, functionServicesPath } from '../services/function-service-objects.ts';

/** Where the handlers come from, as the gateway is given them; one or more. */
export interface HandlerSources {
  /** An operator module, loaded as `causeway run` loads it. */
  module?: FetchHandler;
  /** Services over HTTP (`--functions`). */
  functions: readonly FunctionEndpoint[];
  /** The namespace of FunctionService objects (`--function-services`). */
  functionServices?: string;
}

export interface HandlerReading {
  sources: HandlerSources;
  /** Signs the manifest requests of services over HTTP that share no secret of their own; asked only then. */
  signer(): Promise<Signer>;
  /** The CA to trust for services over https that name none. */
  ca?: string;
  /** --impersonate: the gateway's namespace, of the accounts of services with no FunctionService (see FunctionServiceOptions). */
  impersonate?: string;
}

/** No call is made: the manifest of a module in this process is read directly, unsigned. */
const NO_CALLS: Signer = () => {
  throw new Error('reading the handlers makes no calls to a function service');
};

/** Every service the sources name, connected as the gateway connects: health, then the manifest. Close each. */
export async function connectServices(
  reading: HandlerReading,
  client: KubeClient,
): Promise<FunctionService[]> {
  const { sources } = reading;
  const endpoints = [...sources.functions];
  if (sources.functionServices !== undefined) {
    const listed = await client.get<{ items: KubernetesObject[] }>(
      functionServicesPath(sources.functionServices),
    );
    for (const object of listed.items) endpoints.push(await functionServiceEndpoint(client, object));
  }
  const services: FunctionService[] = [];
  try {
    if (sources.module) {
      services.push(
        await FunctionService.connect({
          transport: inProcessTransport(sources.module),
          name: undefined,
          sign: NO_CALLS,
          scope: 'declared',
          ...(reading.impersonate === undefined ? {} : { impersonate: reading.impersonate }),
        }),
      );
    }
    for (const endpoint of endpoints) services.push(await connectOverHttp(endpoint, reading));
    return services;
  } catch (error) {
    await Promise.all(services.map((service) => service.close()));
    throw error;
  }
}

async function connectOverHttp(
  endpoint: FunctionEndpoint,
  reading: HandlerReading,
): Promise<FunctionService> {
  const transport = httpTransport(endpoint.url, endpoint.ca ?? reading.ca, 1);
  try {
    return await FunctionService.connect({
      transport,
      name: endpoint.name,
      sign: endpoint.secret ? hmacSigner(endpoint.secret) : await reading.signer(),
      ...(endpoint.scope ? { scope: endpoint.scope } : {}),
      ...(reading.impersonate === undefined
        ? {}
        : { impersonate: endpoint.namespace ?? reading.impersonate }),
    });
  } catch (error) {
    await transport.close();
    const reason = error instanceof Error ? error.message : String(error);
    throw new Error(`cannot read the handlers of "${endpoint.name}" at ${endpoint.url}: ${reason}`, {
      cause: error,
    });
  }
}
