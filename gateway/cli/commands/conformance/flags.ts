/** The flags of `causeway conformance` alone; those it shares with other commands are in ../../flags/. */
import { flag, group } from '../../command-line.ts';

/** The service `causeway conformance` checks (conformance). */
export const CHECKED_SERVICE = group(
  'The service',
  flag({
    name: 'name',
    value: '<name>',
    required: true,
    description: 'The name the service must answer to: its calls are signed for it.',
  }),
  flag({
    name: 'functions-ca',
    value: '<file>',
    default: "the system's roots",
    description: 'The CA to trust for an https service.',
  }),
);
