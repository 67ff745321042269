/**
 * Where one watch event of a resource goes, in order: the indexes see every object (every replica's
 * indexes are whole); of the objects this replica handles, the event handlers, the timers and the
 * daemons see it, the reactor hears of objects listed at the start and of deletions, and the queue
 * gets it last, to run a cycle on the object's newest state.
 */
import type { WatchEvent } from '../kube/watcher.ts';
import type { Role } from '../manager/role.ts';
import type { ResourceReactor } from '../reactor/cycle.ts';
import type { Named } from '../reactor/model.ts';
import type { ObjectQueue } from '../reactor/queue.ts';
import type { Daemons } from './daemons.ts';
import type { EventHandlers } from './event-handlers.ts';
import type { IndexFeed } from './indexes.ts';
import type { Timers } from './timers.ts';

export interface FanOutTargets {
  indexFeed: IndexFeed;
  reactor: Pick<ResourceReactor<Named>, 'listedAtStart' | 'forget'>;
  eventHandlers: EventHandlers;
  timers: Timers;
  daemons: Daemons;
  queue: ObjectQueue;
}

export class EventFanOut {
  readonly #targets: FanOutTargets;
  readonly #role: Role;

  constructor(targets: FanOutTargets, role: Role) {
    this.#targets = targets;
    this.#role = role;
  }

  deliver({ type, object, initial }: WatchEvent): void {
    const { indexFeed, reactor, eventHandlers, timers, daemons, queue } = this.#targets;
    indexFeed.observe(type, object);
    if (!this.#role.owns(object.metadata.uid)) return; // another replica's share
    if (initial) reactor.listedAtStart(object.metadata.uid);
    eventHandlers.push(type, object);
    timers.observe(type, object);
    daemons.observe(type, object);
    if (type === 'DELETED') reactor.forget(object.metadata.uid);
    queue.push(type, object);
  }
}
