/** `causeway init <directory>`: a new operator project (./init.ts), and what to do next. */
import { basename, resolve } from 'node:path';
import { command } from '../../command-line.ts';
import { PROJECT } from './flags.ts';
import { init } from './init.ts';

export const initCommand = command({
  name: 'init',
  arguments: ['directory'],
  needs: "the new project's directory, e.g. causeway init my-operator",
  summary:
    'Create an operator project in a new or empty directory, named after it: one handler, its test, a CRD, an example object, and manifests to deploy it.',
  groups: [PROJECT],
  async run({ args: { directory }, values }) {
    const written = await init(directory, { causeway: values.causeway });
    const here = resolve(directory) === process.cwd();
    process.stdout.write(
      `Created ${here ? `${basename(process.cwd())} here` : directory}:\n` +
        written.map((file) => `  ${file}\n`).join('') +
        `\nNext:\n  ${here ? '' : `cd ${directory} && `}npm install && npm test\n` +
        '  kubectl apply -f crd.yaml && npm start    # runs it against the cluster of your kubeconfig\n',
    );
  },
});
