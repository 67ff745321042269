/**
 * In-memory indexes (Kopf's example 16-indexing): the gateway keeps, per key, what index functions
 * return for each pod, and passes the indexes to the handlers that name them. `is_running` and
 * `by_label` are computed by this service, in batches of pods; `by_node` is declarative, read by the
 * gateway from each pod with no call at all. Two probes report the pods at the liveness endpoint, and
 * a timer on each KopfExample lists the running pods of its namespace in its status.
 */
import { type Index, operator } from 'causeway/functions';

const op = operator({ name: 'indexing', scope: { resources: ['pods', 'kopfexamples.kopf.dev'] } });

// Kopf keys this index by a (namespace, name) tuple; object keys are strings, so they are joined.
op.index('pods', function is_running({ namespace, name, status }) {
  return { [`${namespace}/${name}`]: status.phase === 'Running' };
});

op.index('pods', function by_label({ labels, name }) {
  return Object.fromEntries(Object.entries(labels).map(([label, value]) => [`${label}=${value}`, name]));
});

// Declarative: the pods' names by the node they run on (a pod not scheduled yet has no key).
op.index('pods', { id: 'by_node' }, { key: 'spec.nodeName', value: 'metadata.name' });

op.on.probe({ indexes: ['is_running'] }, function pod_count({ indexes }) {
  return (indexes.is_running as Index<boolean>).size;
});

op.on.probe({ indexes: ['is_running'] }, function pod_names({ indexes }) {
  return [...(indexes.is_running as Index<boolean>).keys()].map((key) => String(key).split('/')[1]);
});

op.on.probe({ indexes: ['by_node'] }, function pods_per_node({ indexes }) {
  return Object.fromEntries(
    [...(indexes.by_node as Index<string>)].map(([node, pods]) => [node, pods.length]),
  );
});

op.on.timer(
  'kopfexamples',
  { interval: 5, indexes: ['is_running', 'by_label'] },
  function intervalled({ indexes, namespace, patch, logger }) {
    logger.info(`pods by label: ${JSON.stringify(Object.fromEntries(indexes.by_label as Index))}`);
    const running = [...(indexes.is_running as Index<boolean>)]
      .filter(([key, [isRunning]]) => isRunning && String(key).startsWith(`${namespace}/`))
      .map(([key]) => String(key).replace('/', '::'));
    patch.status = { 'running-pods': running };
  },
);

export default op;
