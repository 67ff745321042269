/**
 * One processing cycle for one object: detect the cause, call each function service once with all of
 * its handlers that are due, then write results and state back through the patcher.
 */
import { createHash } from 'node:crypto';
import type { DueHandler, HandlerSpec, KubernetesObject, Outcome } from '../protocol/index.ts';
import { detectCause } from './causes.ts';
import type { FunctionService } from './dispatch/function-service.ts';
import { invocationRequest } from './dispatch/invocation.ts';
import type { Identity } from './identity.ts';
import type { KubeClient } from './kube/client.ts';
import type { DiscoveredResource } from './kube/discovery.ts';
import { ApiError } from './kube/errors.ts';
import type { Logger } from './logging.ts';
import { applyChanges, emptyChanges } from './patcher.ts';
import { type CycleOutcome, describe } from './queue.ts';
import { essenceOf, serializeEssence } from './state/essence.ts';
import { StateStorage } from './state/storage.ts';

export interface Binding {
  service: FunctionService;
  handlers: HandlerSpec[];
}

/** Everything the gateway serves for one resource. `storage` may move to annotations at run time. */
export interface ServedResource {
  resource: DiscoveredResource;
  storage: StateStorage;
  bindings: Binding[];
}

interface HandlerProgress {
  started: string;
  retry: number;
  done: boolean;
}

export interface ProcessorOptions {
  client: KubeClient;
  served: ServedResource;
  identity: Identity;
  logger: Logger;
}

export interface Processor {
  run(object: KubernetesObject): Promise<CycleOutcome>;
  /** Drops what is kept in memory for an object that is gone. */
  forget(uid: string): void;
}

export function createProcessor(options: ProcessorOptions): Processor {
  const { client, served, identity, logger } = options;
  // Progress of handlers that have not all finished, by object uid. In memory only, for now.
  const progress = new Map<string, Map<string, HandlerProgress>>();

  const run = async (object: KubernetesObject): Promise<CycleOutcome> => {
    const stored = served.storage.read(object);
    const cause = detectCause(object, stored);
    if (cause.reason === 'none') {
      progress.delete(object.metadata.uid);
      return {};
    }
    const log = logger.child(describe(object));
    const records = progress.get(object.metadata.uid) ?? new Map<string, HandlerProgress>();
    progress.set(object.metadata.uid, records);
    const now = new Date().toISOString();

    const calls = served.bindings.map(async ({ service, handlers }) => {
      const due: DueHandler[] = [];
      for (const handler of handlers) {
        let record = records.get(handler.id);
        if (!record) {
          record = { started: now, retry: 0, done: false };
          records.set(handler.id, record);
        }
        if (!record.done) due.push(dueHandler(object, handler.id, record));
      }
      if (due.length === 0) return [] as Array<[string, Outcome]>;
      try {
        const response = await service.invoke(
          invocationRequest(cause.reason, served.resource, object, due, service.timeoutMs),
        );
        for (const line of response.logs)
          log.log(line.level, line.handler ? `${line.handler}: ${line.message}` : line.message);
        return Object.entries(response.outcomes);
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        return due.map(({ id, retry }): [string, Outcome] => [
          id,
          { status: 'temporary', message, delay: serviceRetryDelay(retry) },
        ]);
      }
    });

    const changes = emptyChanges();
    let retryAfterMs: number | undefined;
    for (const [id, outcome] of (await Promise.all(calls)).flat()) {
      const record = records.get(id) as HandlerProgress;
      switch (outcome.status) {
        case 'success':
          record.done = true;
          if (outcome.result !== undefined && outcome.result !== null) changes.status[id] = outcome.result;
          log.info(`handler ${id} succeeded`);
          break;
        case 'permanent':
          record.done = true;
          log.error(`handler ${id} failed permanently: ${outcome.message}`);
          break;
        case 'temporary':
          record.retry++;
          retryAfterMs = Math.min(retryAfterMs ?? Number.POSITIVE_INFINITY, outcome.delay * 1000);
          log.warning(`handler ${id} failed temporarily, retrying in ${outcome.delay}s: ${outcome.message}`);
          break;
      }
    }

    const finished = [...records.values()].every((record) => record.done);
    const essence = serializeEssence(essenceOf(object, identity.annotationPrefix));
    if (finished) {
      const state = served.storage.write({ essence });
      Object.assign(changes.status, state.status);
      Object.assign(changes.object, state.object);
    }

    let written: KubernetesObject | undefined;
    try {
      written = await applyChanges(client, served.resource, object, changes, identity.fieldManager);
      if (finished && written && !served.storage.kept(written, { essence })) {
        written = await moveStateToAnnotations(options, object, essence, log);
      }
    } catch (error) {
      if (error instanceof ApiError && error.status === 404) return {}; // deleted meanwhile: nothing to record
      throw error;
    }
    if (finished) progress.delete(object.metadata.uid);
    return {
      ...(written?.metadata.resourceVersion ? { written: written.metadata.resourceVersion } : {}),
      ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
    };
  };
  return { run, forget: (uid) => progress.delete(uid) };
}

/** The status dropped our record (a structural schema pruned it): keep state in annotations from now on. */
async function moveStateToAnnotations(
  options: ProcessorOptions,
  object: KubernetesObject,
  essence: string,
  log: Logger,
): Promise<KubernetesObject | undefined> {
  const { served, identity } = options;
  log.warning(
    `the status of ${served.resource.plural}.${served.resource.group} does not keep status.${identity.statusKey} ` +
      '(its schema prunes unknown fields); keeping state in annotations instead',
  );
  served.storage = new StateStorage('annotations', identity);
  const changes = emptyChanges();
  Object.assign(changes.object, served.storage.write({ essence }).object);
  return applyChanges(options.client, served.resource, object, changes, identity.fieldManager);
}

/** Seconds before calling a service again after it could not be reached or answered badly. */
const SERVICE_RETRY_DELAYS_S = [1, 2, 5, 10, 30, 60];

function serviceRetryDelay(retry: number): number {
  return SERVICE_RETRY_DELAYS_S[Math.min(retry, SERVICE_RETRY_DELAYS_S.length - 1)] as number;
}

function dueHandler(object: KubernetesObject, id: string, record: HandlerProgress): DueHandler {
  const idempotencyKey = createHash('sha256')
    .update(`${object.metadata.uid}/${id}/${record.started}`)
    .digest('base64url')
    .slice(0, 32);
  return { id, retry: record.retry, started: record.started, idempotencyKey };
}
