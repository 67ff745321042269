/**
 * Function services as Kubernetes objects: a `FunctionService` (causeway.dev/v1alpha1) in the
 * namespace the gateway is told to look in (`--function-services`) names a service's URL and how to
 * trust and call it. Adding, changing and removing one takes effect without a restart, and its status
 * says what the gateway found: the protocol and handlers, or the last error. Services given with
 * `--functions` are served beside them.
 */
import { encodeSecret, type KubernetesObject } from '../../protocol/index.ts';
import { isObject } from '../../protocol/json.ts';
import type { Component } from '../components.ts';
import type { FunctionEndpoint, FunctionServices } from '../dispatch/services.ts';
import type { KubeClient } from '../kube/client.ts';
import { ignoreNotFound } from '../kube/errors.ts';
import { Watcher } from '../kube/watcher.ts';
import type { Logger } from '../logging.ts';
import { delayFor, type Settings } from '../settings.ts';

export const FUNCTION_SERVICE = { group: 'causeway.dev', version: 'v1alpha1', plural: 'functionservices' };

/** The CustomResourceDefinition, as `causeway crd` prints it for `kubectl apply -f -`. */
export function functionServiceDefinition(): KubernetesObject {
  const { group, version, plural } = FUNCTION_SERVICE;
  const positive = (description: string, maximum?: number) => ({
    type: 'integer',
    minimum: 1,
    ...(maximum ? { maximum } : {}),
    description,
  });
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${plural}.${group}` } as KubernetesObject['metadata'],
    spec: {
      group,
      scope: 'Namespaced',
      names: { kind: 'FunctionService', plural, singular: 'functionservice', shortNames: ['fns'] },
      versions: [
        {
          name: version,
          served: true,
          storage: true,
          subresources: { status: {} },
          additionalPrinterColumns: [
            { name: 'URL', type: 'string', jsonPath: '.spec.url' },
            { name: 'Phase', type: 'string', jsonPath: '.status.phase' },
            { name: 'Error', type: 'string', jsonPath: '.status.lastError', priority: 1 },
            { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
          ],
          schema: {
            openAPIV3Schema: {
              type: 'object',
              properties: {
                spec: {
                  type: 'object',
                  required: ['url'],
                  properties: {
                    url: {
                      type: 'string',
                      pattern: '^https?://',
                      description: 'The base URL of the service.',
                    },
                    serviceName: {
                      type: 'string',
                      pattern: '^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$',
                      description:
                        "The name it must answer to, which calls are signed for; the object's name unless given.",
                    },
                    secretRef: {
                      type: 'object',
                      required: ['name'],
                      properties: { name: { type: 'string' }, key: { type: 'string', default: 'secret' } },
                      description:
                        "A Secret in this namespace holding a secret shared with this service alone (HS256), instead of the gateway's signing keys.",
                    },
                    caBundle: {
                      type: 'string',
                      description: 'PEM of the CA to trust for an https URL; the system roots unless given.',
                    },
                    timeoutSeconds: positive(
                      "How long one call may take (default: the gateway's --function-timeout).",
                      600,
                    ),
                    concurrency: positive(
                      "Calls to it at once (default: the gateway's --function-concurrency).",
                    ),
                  },
                },
                status: {
                  type: 'object',
                  properties: {
                    phase: { type: 'string', enum: ['Ready', 'Unreachable'] },
                    protocol: { type: 'string' },
                    handlers: { type: 'array', items: { type: 'string' } },
                    lastError: { type: 'string' },
                    observedGeneration: { type: 'integer' },
                  },
                },
              },
            },
          },
        },
      ],
    },
  };
}

export interface FunctionServiceObjectsOptions {
  client: KubeClient;
  namespace: string;
  services: FunctionServices;
  settings: Settings;
  logger: Logger;
}

interface Known {
  serviceName: string;
  generation: number | undefined;
  /** The next attempt, while the service could not be served. */
  retry?: NodeJS.Timeout;
  failures: number;
}

export class FunctionServiceObjects implements Component {
  readonly name = 'function service objects';
  readonly leaderOnly = false; // every replica calls the services
  readonly #options: FunctionServiceObjectsOptions;
  readonly #watcher: Watcher;
  /** By object name. */
  readonly #known = new Map<string, Known>();
  /** One change at a time, in the order the watch told them. */
  #changing: Promise<void> = Promise.resolve();
  #stopped = false;

  constructor(options: FunctionServiceObjectsOptions) {
    this.#options = options;
    const { group, version, plural } = FUNCTION_SERVICE;
    this.#watcher = new Watcher({
      client: options.client,
      path: `/apis/${group}/${version}/namespaces/${options.namespace}/${plural}`,
      logger: options.logger.child(`function services in ${options.namespace}`),
      settings: options.settings.watching,
      onEvent: ({ type, object }) =>
        this.#serially(() => (type === 'DELETED' ? this.#forget(object) : this.#observe(object))),
    });
  }

  start(): void {
    this.#watcher.start();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    for (const known of this.#known.values()) clearTimeout(known.retry);
    await this.#watcher.stop();
    await this.#changing;
  }

  #serially(change: () => Promise<void>): void {
    this.#changing = this.#changing.then(change).catch((error) => {
      this.#options.logger.error(`function services: ${error instanceof Error ? error.message : error}`);
    });
  }

  /** A new or changed spec is served anew; the gateway's own status writes (same generation) change nothing. */
  async #observe(object: KubernetesObject, again = false): Promise<void> {
    const { name, generation } = object.metadata;
    const known = this.#known.get(name);
    if (known && known.generation === generation && !again) return;
    const spec = isObject(object.spec) ? object.spec : {};
    const serviceName = typeof spec.serviceName === 'string' ? spec.serviceName : name;
    if (known && known.serviceName !== serviceName) await this.#options.services.remove(known.serviceName);
    clearTimeout(known?.retry);
    const current: Known = {
      serviceName,
      generation,
      failures: known && known.generation === generation ? known.failures : 0,
    };
    this.#known.set(name, current);
    try {
      const endpoint = await this.#endpointOf(object, serviceName);
      const service = await this.#options.services.put(endpoint);
      current.failures = 0;
      await this.#writeStatus(object, {
        phase: 'Ready',
        protocol: service.manifest.protocol,
        handlers: service.manifest.handlers.map((handler) => handler.id),
        observedGeneration: generation,
      });
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      const delayS = delayFor(this.#options.settings.calls.serviceRetryDelaysS, current.failures++);
      this.#options.logger.warning(
        `FunctionService ${this.#options.namespace}/${name} is not served yet: ${message}; trying again in ${delayS}s`,
      );
      await this.#writeStatus(object, {
        phase: 'Unreachable',
        lastError: message,
        observedGeneration: generation,
      });
      if (!this.#stopped) {
        current.retry = setTimeout(() => this.#serially(() => this.#retry(name)), delayS * 1000);
      }
    }
  }

  async #retry(name: string): Promise<void> {
    const { group, version, plural } = FUNCTION_SERVICE;
    const object = await ignoreNotFound(
      this.#options.client.get<KubernetesObject>(
        `/apis/${group}/${version}/namespaces/${this.#options.namespace}/${plural}/${name}`,
      ),
    );
    if (object && this.#known.has(name)) await this.#observe(object, true);
  }

  async #forget(object: KubernetesObject): Promise<void> {
    const known = this.#known.get(object.metadata.name);
    if (!known) return;
    clearTimeout(known.retry);
    this.#known.delete(object.metadata.name);
    await this.#options.services.remove(known.serviceName);
    this.#options.logger.info(
      `function service "${known.serviceName}" is no longer served: its FunctionService is gone`,
    );
  }

  async #endpointOf(object: KubernetesObject, serviceName: string): Promise<FunctionEndpoint> {
    const spec = object.spec as {
      url: string;
      secretRef?: { name: string; key?: string };
      caBundle?: string;
      timeoutSeconds?: number;
      concurrency?: number;
    };
    let secret: Uint8Array | undefined;
    if (spec.secretRef) {
      const { name, key = 'secret' } = spec.secretRef;
      const read = await this.#options.client.get<{ data?: Record<string, string> }>(
        `/api/v1/namespaces/${this.#options.namespace}/secrets/${name}`,
      );
      const value = read.data?.[key];
      if (!value) throw new Error(`the Secret ${name} has no key "${key}"`);
      // As text, as a service reads it from its environment; checked for length.
      secret = encodeSecret(Buffer.from(value, 'base64').toString().trim());
    }
    return {
      name: serviceName,
      url: spec.url,
      ...(secret ? { secret } : {}),
      ...(spec.caBundle ? { ca: spec.caBundle } : {}),
      ...(spec.timeoutSeconds ? { timeoutMs: spec.timeoutSeconds * 1000 } : {}),
      ...(spec.concurrency ? { concurrency: spec.concurrency } : {}),
    };
  }

  /** Writes the status when it says something new: the gateway's writes stay few. */
  async #writeStatus(object: KubernetesObject, status: Record<string, unknown>): Promise<void> {
    const { phase, ...rest } = status;
    const next = { phase, lastError: null, handlers: null, protocol: null, ...rest };
    const current = isObject(object.status) ? object.status : {};
    const unchanged = Object.entries(next).every(
      ([key, value]) => JSON.stringify(current[key] ?? null) === JSON.stringify(value ?? null),
    );
    if (unchanged) return;
    const { group, version, plural } = FUNCTION_SERVICE;
    try {
      await this.#options.client.patch(
        `/apis/${group}/${version}/namespaces/${this.#options.namespace}/${plural}/${object.metadata.name}/status`,
        'merge',
        { status: next },
      );
    } catch (error) {
      this.#options.logger.warning(
        `the status of FunctionService ${this.#options.namespace}/${object.metadata.name} could not be written: ${error instanceof Error ? error.message : error}`,
      );
    }
  }
}
