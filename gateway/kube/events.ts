/**
 * Kubernetes events about objects: the ones handlers ask for, and Warnings for handler failures. Never
 * about Event objects themselves (that would feed itself), never one per log line.
 */
import type { KubernetesEvent, KubernetesObject } from '../../protocol/index.ts';
import type { Logger } from '../logging.ts';
import type { KubeClient } from './client.ts';

/** The API refuses longer messages. */
export const MAX_MESSAGE_LENGTH = 1024;
const COMPONENT = 'causeway';

/** Cut by code points, so a character outside the BMP (an emoji) is never split in two. */
export function truncate(message: string): string {
  const characters = [...message];
  return characters.length <= MAX_MESSAGE_LENGTH
    ? message
    : `${characters.slice(0, MAX_MESSAGE_LENGTH - 1).join('')}…`;
}

export function eventFor(
  object: KubernetesObject,
  event: KubernetesEvent,
  now = new Date(),
): Record<string, unknown> | undefined {
  if (object.kind === 'Event' && (object.apiVersion === 'v1' || object.apiVersion === 'events.k8s.io/v1'))
    return undefined;
  const namespace = object.metadata.namespace ?? 'default';
  const time = now.toISOString();
  return {
    apiVersion: 'v1',
    kind: 'Event',
    metadata: { generateName: `${object.metadata.name}.`, namespace },
    involvedObject: {
      apiVersion: object.apiVersion,
      kind: object.kind,
      name: object.metadata.name,
      namespace: object.metadata.namespace,
      uid: object.metadata.uid,
      resourceVersion: object.metadata.resourceVersion,
    },
    type: event.type,
    reason: event.reason.slice(0, 128),
    message: truncate(event.message),
    source: { component: COMPONENT },
    reportingComponent: COMPONENT,
    reportingInstance: COMPONENT,
    firstTimestamp: time,
    lastTimestamp: time,
    count: 1,
  };
}

/** Posts events; a failure to post is logged, never fatal: events are a courtesy. */
export async function postEvents(
  client: KubeClient,
  object: KubernetesObject,
  events: KubernetesEvent[],
  logger: Logger,
): Promise<void> {
  await Promise.all(
    events.map(async (event) => {
      const body = eventFor(object, event);
      if (!body) return;
      const namespace = (body.metadata as { namespace: string }).namespace;
      try {
        await client.request(`/api/v1/namespaces/${namespace}/events`, { method: 'POST', body });
      } catch (error) {
        logger.warning(
          `could not post event ${event.reason}: ${error instanceof Error ? error.message : error}`,
        );
      }
    }),
  );
}
