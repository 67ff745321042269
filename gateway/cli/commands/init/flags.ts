/** The flags of `causeway init` alone; those it shares with other commands are in ../../flags/. */
import packageJson from '../../../../package.json' with { type: 'json' };
import { flag, group } from '../../command-line.ts';

/** The project `causeway init` makes (init). */
export const PROJECT = group(
  'The project',
  flag({
    name: 'causeway',
    value: '<spec>',
    default: `^${packageJson.version}`,
    description:
      "The project's causeway dependency: a version range, or the path of a package tarball or directory.",
  }),
);
