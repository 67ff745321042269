/**
 * Kubernetes events about objects: the ones handlers ask for, and Warnings for handler failures. Never
 * about Event objects themselves (that would feed itself), never one per log line.
 */
import type { KubernetesEvent, KubernetesObject, ObjectReference } from '../../protocol/index.ts';
import type { Logger } from '../logging.ts';
import type { KubeClient } from './client.ts';
import { clientFor } from './written-as.ts';

/** Events about Events are never posted. */
const EVENT_API_VERSIONS: ReadonlySet<string> = new Set(['v1', 'events.k8s.io/v1']);

/** The API refuses longer messages. */
export const MAX_MESSAGE_LENGTH = 1024;
/** Who the gateway's events say reported them. */
export const EVENT_COMPONENT = 'causeway';

/** Cut by code points, so a character outside the BMP (an emoji) is never split in two. */
export function truncate(message: string): string {
  const characters = [...message];
  return characters.length <= MAX_MESSAGE_LENGTH
    ? message
    : `${characters.slice(0, MAX_MESSAGE_LENGTH - 1).join('')}…`;
}

/**
 * The event's body: about the handled object, or about the object its `about` names, in that object's
 * namespace (`default` for a cluster-scoped one, where the API wants it). Undefined about an Event.
 */
export function eventFor(
  object: KubernetesObject,
  event: KubernetesEvent,
  now = new Date(),
): Record<string, unknown> | undefined {
  const involved: ObjectReference & { resourceVersion?: string } = event.about ?? {
    apiVersion: object.apiVersion,
    kind: object.kind,
    name: object.metadata.name,
    namespace: object.metadata.namespace,
    uid: object.metadata.uid,
    resourceVersion: object.metadata.resourceVersion,
  };
  if (involved.kind === 'Event' && EVENT_API_VERSIONS.has(involved.apiVersion)) return undefined;
  const namespace = involved.namespace ?? 'default';
  const time = now.toISOString();
  return {
    apiVersion: 'v1',
    kind: 'Event',
    metadata: { generateName: `${involved.name}.`, namespace },
    involvedObject: {
      apiVersion: involved.apiVersion,
      kind: involved.kind,
      name: involved.name,
      namespace: involved.namespace,
      uid: involved.uid,
      resourceVersion: involved.resourceVersion,
    },
    type: event.type,
    reason: event.reason.slice(0, 128),
    message: truncate(event.message),
    source: { component: EVENT_COMPONENT },
    reportingComponent: EVENT_COMPONENT,
    reportingInstance: EVENT_COMPONENT,
    firstTimestamp: time,
    lastTimestamp: time,
    count: 1,
  };
}

/**
 * The events, each `about` without a uid completed from the object of its apiVersion, kind and name
 * (and namespace, when it names one) among those applied for the same call: a handler that applies a
 * child cannot know its uid, nor always its namespace (the gateway chose it), yet can post about it.
 */
export function aboutApplied(
  events: readonly KubernetesEvent[],
  applied: readonly KubernetesObject[],
): KubernetesEvent[] {
  return events.map((event) => {
    const { about } = event;
    if (!about || about.uid !== undefined) return event;
    const match = applied.find(
      ({ apiVersion, kind, metadata }) =>
        apiVersion === about.apiVersion &&
        kind === about.kind &&
        metadata.name === about.name &&
        (about.namespace === undefined || about.namespace === metadata.namespace),
    );
    if (!match) return event;
    const { namespace, uid } = match.metadata;
    return { ...event, about: { ...about, ...(namespace ? { namespace } : {}), uid } };
  });
}

/**
 * Posts events, completing their `about` from the objects `applied` for the same call, each as the
 * account it is marked to be written as (written-as.ts; the gateway's own otherwise); a failure to post
 * is logged with the apiserver's reason, never fatal (events are a courtesy), and never tried again
 * as another account.
 */
export async function postEvents(
  client: KubeClient,
  object: KubernetesObject,
  events: KubernetesEvent[],
  logger: Logger,
  applied: readonly KubernetesObject[] = [],
): Promise<void> {
  await Promise.all(
    aboutApplied(events, applied).map(async (event) => {
      const body = eventFor(object, event);
      if (!body) return;
      const namespace = (body.metadata as { namespace: string }).namespace;
      try {
        await clientFor(client, event).request(`/api/v1/namespaces/${namespace}/events`, {
          method: 'POST',
          body,
        });
      } catch (error) {
        logger.warning('could not post an event', { reason: event.reason, err: error });
      }
    }),
  );
}
