/**
 * Children: every KopfExample gets a Pod of its own. The function has no cluster credentials, so it
 * returns the Pod and the gateway creates it; `adopt` makes it a child (owner reference, namespace,
 * name and labels), so Kubernetes deletes it with its parent.
 */
import { adopt, operator } from 'causeway/functions';

const op = operator({
  name: 'children',
  scope: { resources: ['kopfexamples.kopf.dev'], children: ['pods'] },
});

op.on.create('kopfexamples', async function create_fn({ body, spec, name, apply, logger }) {
  const pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: `${name}-pod` },
    spec: {
      restartPolicy: 'Never',
      containers: [
        { name: 'sleep', image: 'busybox', command: ['sh', '-c', `sleep ${Number(spec.duration ?? 60)}`] },
      ],
    },
  };
  adopt(pod, body);
  apply(pod);
  logger.info(`asked for pod ${pod.metadata.name}`);
  return { 'pod-name': pod.metadata.name };
});

export default op;
