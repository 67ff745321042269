/** The flags of `causeway release` alone; those it shares with other commands are in ../../flags/. */
import { group } from '../../command-line.ts';
import { OBJECT_NAMESPACE } from '../../flags/object-namespace.ts';

/** The object `causeway release` releases (release). */
export const RELEASED_OBJECT = group('The object', OBJECT_NAMESPACE);
