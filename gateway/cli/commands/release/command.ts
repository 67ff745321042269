/** `causeway release <resource> <name>`: one object's finalizer removed (./release.ts), for an object stuck in deletion. */

import { CLUSTER_NOTE } from '../../cluster.ts';
import { command } from '../../command-line.ts';
import { IDENTITY } from '../../flags/identity.ts';
import { RELEASED_OBJECT } from './flags.ts';
import { releaseOptions } from './options.ts';
import { release } from './release.ts';

export const releaseCommand = command({
  name: 'release',
  arguments: ['resource', 'name'],
  needs: 'a resource and a name, e.g. causeway release kex my-object -n default',
  summary:
    "Remove the gateway's finalizer from one object, without calling any handler: for objects stuck in deletion after their operator is gone.",
  note: CLUSTER_NOTE,
  groups: [RELEASED_OBJECT, IDENTITY],
  async run({ args, values }) {
    process.stdout.write(`${await release(releaseOptions(args, values))}\n`);
  },
});
