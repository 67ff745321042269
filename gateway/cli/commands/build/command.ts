/** `causeway build --target workers|node <module>`: a function module bundled to deploy without Causeway's CLI. */
import { relative } from 'node:path';
import { command } from '../../command-line.ts';
import { buildModule } from './build.ts';
import { BUILT } from './flags.ts';
import { buildOptions } from './options.ts';

export const buildCommand = command({
  name: 'build',
  arguments: ['module'],
  needs: "the operator module's path and the target, e.g. causeway build --target workers ./operator.ts",
  summary:
    'Bundle the function service of a module into one file: for Cloudflare Workers, with a wrangler.toml for `wrangler deploy`; or for Node, run with `node service.mjs` in an image.',
  note: 'The Node bundle listens on $PORT (8080) and $HOST (0.0.0.0), and verifies calls with $CAUSEWAY_JWKS, $CAUSEWAY_JWKS_URL or $CAUSEWAY_SECRET. See "Functions on Cloudflare Workers" in the deploy/README.md of Causeway.',
  groups: [BUILT],
  async run({ args: { module }, values, logger }) {
    const written = await buildModule(buildOptions(module, values));
    logger.info(`built ${written.map((path) => relative(process.cwd(), path)).join(' and ')}`);
  },
});
