/** `causeway crd`: the FunctionService definition of this version, for `causeway crd | kubectl apply -f -`. */
import { stringify } from 'yaml';
import { functionServiceDefinition } from '../../../services/function-service-objects.ts';
import { command } from '../../command-line.ts';

export const crdCommand = command({
  name: 'crd',
  arguments: [],
  summary: 'Print the FunctionService CustomResourceDefinition, for `causeway crd | kubectl apply -f -`.',
  groups: [],
  async run() {
    process.stdout.write(stringify(functionServiceDefinition()));
  },
});
