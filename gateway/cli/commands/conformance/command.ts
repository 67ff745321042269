/** `causeway conformance <url> --name <name>`: a function service, in any language, held to protocol v1. */
import { runConformance } from '../../../conformance/checks.ts';
import { KubeClient } from '../../../kube/client.ts';
import { loadKubeConfig } from '../../../kube/kubeconfig.ts';
import { command } from '../../command-line.ts';
import { SIGNING_AS_GATEWAY } from '../../flags/signing.ts';
import { readText } from '../../process.ts';
import { currentSigningKey, readSecret } from '../../secret.ts';
import { CHECKED_SERVICE } from './flags.ts';
import { conformanceOptions } from './options.ts';

export const conformanceCommand = command({
  name: 'conformance',
  arguments: ['url'],
  needs: 'the service URL and its name, e.g. causeway conformance http://127.0.0.1:8080 --name billing',
  summary:
    'Check a function service, in any language, against protocol v1: health, manifest, a call per handler, the error model, and a refusal of every forged request. Signs as the gateway: --signing-keys or --secret-file.',
  groups: [CHECKED_SERVICE, SIGNING_AS_GATEWAY],
  async run({ args: { url }, values }) {
    const { signingKeys, ...target } = conformanceOptions(url, values, readText);
    const signing = signingKeys
      ? { key: await currentSigningKey(await KubeClient.fromConfig(loadKubeConfig()), signingKeys) }
      : { secret: readSecret(values['secret-file']) };
    const results = await runConformance({ ...target, signing });
    for (const { name, failure } of results) {
      process.stdout.write(failure ? `✘ ${name}\n    ${failure}\n` : `✔ ${name}\n`);
    }
    const failed = results.filter((result) => result.failure).length;
    process.stdout.write(`\n${results.length - failed} passed, ${failed} failed\n`);
    if (failed > 0) process.exitCode = 1;
  },
});
