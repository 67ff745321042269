/** The flags of `causeway build` alone; those it shares with other commands are in ../../flags/. */
import { JWKS_URL_VARIABLE, SECRET_VARIABLE } from '../../../../protocol/index.ts';
import { flag, group } from '../../command-line.ts';

/** What `causeway build` makes, and where (build). */
export const BUILT = group(
  'The build',
  flag({
    name: 'target',
    value: '<target>',
    required: true,
    description:
      'workers: a bundle for Cloudflare Workers and the wrangler.toml that deploys it; node: a bundle that node runs as the function service, for an image.',
  }),
  flag({
    name: 'out',
    value: '<dir>',
    default: 'dist/<target>',
    description: 'The folder to write into, made if missing.',
  }),
  flag({
    name: 'worker-name',
    value: '<name>',
    default: "the module's file name",
    description: "The Worker's name in wrangler.toml (workers).",
  }),
  flag({
    name: 'jwks-url',
    value: '<url>',
    description: `The https URL where the Worker fetches the gateway's public keys, written into wrangler.toml as $${JWKS_URL_VARIABLE} (workers). Without it, the Worker verifies with a secret: \`wrangler secret put ${SECRET_VARIABLE}\`.`,
  }),
);
