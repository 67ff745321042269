/** `causeway explain <resource>/<name>`: what the gateway would do with one object, and why (../../../explain/). */

import { explainObject } from '../../../explain/cluster.ts';
import { explanationText } from '../../../explain/text.ts';
import { KubeClient } from '../../../kube/client.ts';
import { Discovery } from '../../../kube/discovery.ts';
import { loadKubeConfig } from '../../../kube/kubeconfig.ts';
import { CLUSTER_NOTE } from '../../cluster.ts';
import { command } from '../../command-line.ts';
import { EXPLAINED_HANDLERS } from '../../flags/handlers.ts';
import { IDENTITY } from '../../flags/identity.ts';
import { SIGNING_AS_GATEWAY } from '../../flags/signing.ts';
import { loadOperatorModule } from '../../operator-module.ts';
import { readText, whereabouts } from '../../process.ts';
import { gatewaySigner } from '../../secret.ts';
import { EXPLAINED_OBJECT, EXPLAINED_STATE } from './flags.ts';
import { explainOptions } from './options.ts';

export const explainCommand = command({
  name: 'explain',
  arguments: ['object'],
  needs:
    'the object, as <resource>/<name>, e.g. causeway explain kopfexamples/my-object -n default --module ./operator.ts',
  summary:
    "Explain what the gateway would do with one object, and why: the cause it would handle now, and per handler whether its filters match (or which fails; a when callback cannot be judged offline), its progress (retries, next attempt, last message), its result's key, the finalizer, and which replica owns the object. Reads the object and the gateway's state through the kubeconfig, and the handlers from where the gateway gets them.",
  note: `${CLUSTER_NOTE} Exit code 0: explained; 1: the object, its resource or a service's handlers could not be read (the message says which); 2: a command line that says no valid thing. -o json prints an Explanation (apiVersion causeway.dev/v1): see docs/observability.md, "Explaining an object".`,
  groups: [EXPLAINED_OBJECT, EXPLAINED_HANDLERS, EXPLAINED_STATE, SIGNING_AS_GATEWAY, IDENTITY],
  async run({ args: { object }, values, logger }) {
    const { request, sources, module, output, signingKeys } = explainOptions(object, values, whereabouts());
    const client = await KubeClient.fromConfig(loadKubeConfig());
    const ca = values['functions-ca'];
    const explanation = await explainObject(
      {
        ...request,
        sources: { ...sources, ...(module ? { module: await loadOperatorModule(module) } : {}) },
        signer: gatewaySigner(client, signingKeys, values['secret-file']),
        ...(ca ? { ca: readText(ca) } : {}),
      },
      client,
      await Discovery.load(client),
      logger,
    );
    process.stdout.write(
      output === 'json' ? `${JSON.stringify(explanation, null, 2)}\n` : explanationText(explanation),
    );
  },
});
