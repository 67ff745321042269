/**
 * The fence between a resource's writers and the API: every write asks the role first. A replica that
 * may no longer handle objects writes nothing (FencedOut), and one whose Lease renewal is overdue
 * guards its writes with the resourceVersion they come from, so one arriving late over a newer state
 * is refused. Alone, every write goes as it is.
 */
import type { Role } from '../manager/role.ts';
import type { ReactorApi } from '../reactor/api.ts';

export function fencedApi(api: ReactorApi, role: Role): ReactorApi {
  return {
    async jsonPatch(object, patch) {
      role.fence(); // guarded by its own `test` of the resourceVersion where it matters (finalizers)
      return api.jsonPatch(object, patch);
    },
    async applyChanges(object, changes, guarded) {
      const leave = role.fence();
      return api.applyChanges(object, changes, guarded || leave === 'guarded');
    },
    async applyObject(object, namespace) {
      role.fence();
      return api.applyObject(object, namespace);
    },
    async postEvents(object, events, log, applied) {
      role.fence();
      return api.postEvents(object, events, log, applied);
    },
    read: (object) => api.read(object),
  };
}
