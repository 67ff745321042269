/**
 * Handlers on built-in resources (Kopf's on.create('configmaps'), on.create('pods')): the same API as
 * for custom resources. Built-ins have no status of ours to keep state in, so the gateway keeps its
 * record in the annotation `causeway.dev/last-handled`; handlers change them through `patch`.
 * Label filters keep the gateway off every other object: no call, no write.
 */
import { operator } from 'causeway/functions';

const op = operator({ name: 'builtins', scope: { resources: ['configmaps', 'pods'] } });

const SUMMARY = 'example.causeway.dev/summary';

// Config maps labelled for it: summarised in an annotation.
op.on.create(
  'configmaps',
  { labels: { 'example.causeway.dev/summarise': 'yes' } },
  async function configmap_fn({ name, body, patch, logger }) {
    const keys = Object.keys((body.data as Record<string, string> | undefined) ?? {}).sort();
    logger.info(`config map ${name} has ${keys.length} keys`);
    patch.metadata = { annotations: { [SUMMARY]: `${keys.length} keys: ${keys.join(', ')}` } };
    return { keys };
  },
);

// Pods labelled for it: their containers' images in an annotation. Pods need no node for this: one
// that is never scheduled is created, and handled, all the same.
op.on.create(
  'pods',
  { labels: { 'example.causeway.dev/summarise': 'yes' } },
  async function pod_fn({ spec, patch }) {
    const containers = (spec as { containers: Array<{ name: string; image: string }> }).containers;
    const images = containers.map(({ name, image }) => `${name}=${image}`);
    patch.metadata = { annotations: { [SUMMARY]: images.join(', ') } };
  },
);

export default op;
