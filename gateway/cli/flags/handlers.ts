import { flag, group } from '../command-line.ts';

/** Where `causeway explain` reads the handlers: from where the gateway gets them (explain, rbac). */
export const EXPLAINED_HANDLERS = group(
  'Handlers, from where the gateway gets them (one or more)',
  flag({
    name: 'module',
    value: '<file>',
    description: 'An operator module, loaded as `causeway run` loads it.',
  }),
  flag({
    name: 'functions',
    value: '<name>=<url>',
    multiple: true,
    description:
      'A function service over HTTP, as the gateway is given it: its manifest is read, signed for that name (--signing-keys or --secret-file); repeat for several.',
  }),
  flag({
    name: 'function-services',
    value: '<ns>',
    description:
      'The function services of the FunctionService objects in this namespace, read as the gateway reads them (a secretRef signs for its own service).',
  }),
  flag({
    name: 'functions-ca',
    value: '<file>',
    default: "the system's roots",
    description: 'The CA to trust for an https service that names none.',
  }),
);
