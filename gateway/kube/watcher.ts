/**
 * List, then watch from the list's resourceVersion, forever: bookmarks keep the position fresh, a 410
 * (position too old) triggers a re-list, other failures reconnect with backoff and jitter, and a watch
 * that falls silent is dropped so it can never hang the gateway.
 */
import type { KubernetesObject } from '../../protocol/index.ts';
import { isObject } from '../../protocol/json.ts';
import type { Logger } from '../logging.ts';
import type { Settings } from '../settings.ts';
import { type Backoff, backoffDelay, sleepUnlessWoken, spreadRetryAfter } from '../timing.ts';
import type { KubeClient } from './client.ts';
import { ApiError } from './errors.ts';
import { waitsForComeback, watchFailureLevel } from './reachability.ts';

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED';

export interface WatchEvent {
  type: WatchEventType;
  object: KubernetesObject;
  /** Delivered by the first listing of a watch made at the gateway's start: the object existed before. */
  initial?: boolean;
}

export interface WatcherOptions {
  client: KubeClient;
  /** Collection path, e.g. `/apis/kopf.dev/v1/namespaces/default/kopfexamples`. */
  path: string;
  labelSelector?: string;
  logger: Logger;
  onEvent(event: WatchEvent): void;
  /** Called once the first list has been delivered. */
  onSynced?(): void;
  /** Called when it starts again after a failure, or lists again after a 410 Gone (not its routine renewal). */
  onRestart?(): void;
  settings: Settings['watching'];
}

/** The apiserver's bookmark interval (its watch cache's bookmarkFrequency), in seconds. */
const BOOKMARK_INTERVAL_S = 60;
/** Allowed beyond a bookmark's due time: for the apiserver's timers' jitter and a loaded server. */
const BOOKMARK_MARGIN_S = 15;

/**
 * How long a watch may show nothing before it is taken for dead and dropped. The apiserver's watch
 * cache sends a watch that allows them a BOOKMARK every minute and 2 s before the watch's deadline;
 * so, once a watch's server has sent one, the sooner of the two and a margin: 75 s for the default
 * watch of 5 minutes, 35 s for one of 20 s. A server that sends none (an aggregated API, a resource
 * not in the watch cache) gets the watch's whole length and a minute, not to be taken for dead when
 * only quiet.
 */
export function silenceMs({ watchSeconds }: Settings['watching'], bookmarks: boolean): number {
  if (!bookmarks) return (watchSeconds + 60) * 1000;
  return (Math.min(BOOKMARK_INTERVAL_S, watchSeconds) + BOOKMARK_MARGIN_S) * 1000;
}

interface ListPage {
  metadata: { resourceVersion: string; continue?: string };
  items: KubernetesObject[];
}

class Expired extends Error {}

export class Watcher {
  readonly #options: WatcherOptions;
  readonly #abort = new AbortController();
  /**
   * uid → what is kept of each object: enough to report a deletion that happened while the watch was
   * away (found at the next list), not the whole object, so memory does not grow with object size.
   */
  readonly #known = new Map<string, KubernetesObject>();
  #resourceVersion: string | undefined;
  /** Whether the server has sent this resource's watches a bookmark: then silence is bounded by their interval. */
  #bookmarks = false;
  #running: Promise<void> | undefined;

  constructor(options: WatcherOptions) {
    this.#options = options;
  }

  /** How many objects it shows now. */
  get objectCount(): number {
    return this.#known.size;
  }

  /** The uids of the objects it shows now. */
  uids(): IterableIterator<string> {
    return this.#known.keys();
  }

  start(): void {
    this.#running ??= this.#loop();
  }

  async stop(): Promise<void> {
    this.#abort.abort();
    await this.#running;
  }

  async #loop(): Promise<void> {
    const backoff: Backoff = { ...this.#options.settings.retryDelayMs, jitter: true };
    // The backoff is of attempts the API refused or left unanswered: one it answered starts it over, so
    // that a watch broken after it opened (the apiserver restarted, again and again) reopens promptly.
    let failures = 0;
    /** Whether it waits for the API to come back, as well as for its backoff (waitsForComeback). */
    let comingBack = false;
    const answered = () => {
      failures = 0;
      comingBack = false;
    };
    /** Failed answers in a row: reset by a list, a watch the server ended, or no answer at all. */
    let failedAnswers = 0;
    let synced = false;
    while (!this.#abort.signal.aborted) {
      try {
        if (this.#resourceVersion === undefined) {
          await this.#list();
          answered();
          failedAnswers = 0;
          if (!synced) {
            synced = true;
            this.#options.onSynced?.();
          }
        }
        await this.#watch(answered);
        failedAnswers = 0;
      } catch (error) {
        if (this.#abort.signal.aborted) return;
        this.#options.onRestart?.();
        if (error instanceof Expired || (error instanceof ApiError && error.status === 410)) {
          this.#options.logger.debug('watch position expired (410 Gone): listing again', {
            path: this.#options.path,
            resourceVersion: this.#resourceVersion,
          });
          this.#resourceVersion = undefined;
          continue;
        }
        failedAnswers = error instanceof ApiError ? failedAnswers + 1 : 0;
        this.#options.logger.log(watchFailureLevel(error, failedAnswers), 'watch failed, retrying', {
          path: this.#options.path,
          err: describeError(error),
        });
        const retryAfter = error instanceof ApiError ? (error.retryAfterSeconds ?? 0) * 1000 : 0;
        const { client } = this.#options;
        comingBack = waitsForComeback(error, comingBack);
        const woken = await sleepUnlessWoken(
          Math.max(backoffDelay(backoff, failures), spreadRetryAfter(retryAfter)),
          comingBack ? (over) => client.whenBack(over) : undefined,
          this.#abort.signal,
        );
        if (woken) answered();
        else failures++;
      }
    }
  }

  async #list(): Promise<void> {
    const seen = new Set<string>();
    let continueToken: string | undefined;
    let resourceVersion = '';
    do {
      const page = await this.#options.client.request<ListPage>(this.#options.path, {
        query: {
          limit: this.#options.settings.pageSize,
          continue: continueToken,
          labelSelector: this.#options.labelSelector,
        },
        signal: this.#abort.signal,
      });
      resourceVersion = page.metadata.resourceVersion;
      continueToken = page.metadata.continue || undefined;
      for (const object of page.items) {
        if (!this.#identifiable(object, 'listed')) continue;
        seen.add(object.metadata.uid);
        this.#deliver(this.#known.has(object.metadata.uid) ? 'MODIFIED' : 'ADDED', object);
      }
    } while (continueToken);
    for (const [uid, object] of this.#known) if (!seen.has(uid)) this.#deliver('DELETED', object);
    this.#resourceVersion = resourceVersion;
  }

  /** One watch, from the last position; `answered` once the server has answered it with a stream. */
  async #watch(answered: () => void): Promise<void> {
    const silence = new AbortController();
    const signal = AbortSignal.any([this.#abort.signal, silence.signal]);
    const silent = () =>
      setTimeout(() => silence.abort(), silenceMs(this.#options.settings, this.#bookmarks));
    let timer = silent();
    try {
      const body = await this.#options.client.stream(this.#options.path, {
        query: {
          watch: true,
          resourceVersion: this.#resourceVersion,
          allowWatchBookmarks: true,
          timeoutSeconds: this.#options.settings.watchSeconds,
          labelSelector: this.#options.labelSelector,
        },
        signal,
      });
      answered();
      let pending = '';
      // One decoder for the stream: a character split between two chunks is decoded whole.
      const decoder = new TextDecoder();
      const opened = performance.now();
      let events = 0;
      for await (const chunk of body) {
        clearTimeout(timer);
        pending += decoder.decode(chunk, { stream: true });
        let newline = pending.indexOf('\n');
        while (newline >= 0) {
          const line = pending.slice(0, newline);
          pending = pending.slice(newline + 1);
          if (line.trim()) this.#handleLine(line);
          events++;
          newline = pending.indexOf('\n');
        }
        timer = silent(); // after the lines: a first bookmark among them shortens the bound at once
      }
      this.#options.logger.debug('watch ended by the server; watching on', {
        path: this.#options.path,
        seconds: Number(((performance.now() - opened) / 1000).toFixed(1)),
        events,
        resourceVersion: this.#resourceVersion,
      });
    } catch (error) {
      // A silent stream is dropped and reopened from the last position; anything else is a failure.
      if (!silence.signal.aborted) throw error;
      this.#options.onRestart?.();
      this.#options.logger.warning('watch silent, dropped it; watching again from where it was', {
        path: this.#options.path,
        silentSeconds: silenceMs(this.#options.settings, this.#bookmarks) / 1000,
        resourceVersion: this.#resourceVersion,
      });
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * One event of the stream. One the gateway cannot read (not JSON, of no type it knows, or of an
   * object without a uid) is skipped, saying so: failing the watch would only reopen it before that
   * same event, and the good events after it would never come.
   */
  #handleLine(line: string): void {
    let event: unknown;
    try {
      event = JSON.parse(line);
    } catch {
      this.#skip('not JSON', line);
      return;
    }
    if (!isObject(event)) {
      this.#skip('not an event', line);
      return;
    }
    const object = event.object as (KubernetesObject & { code?: number }) | undefined;
    switch (event.type) {
      case 'ADDED':
      case 'MODIFIED':
      case 'DELETED':
        if (!this.#identifiable(object, 'watched')) return;
        if (typeof object.metadata.resourceVersion === 'string')
          this.#resourceVersion = object.metadata.resourceVersion;
        this.#deliver(event.type, object);
        return;
      case 'BOOKMARK':
        if (
          isObject(object) &&
          isObject(object.metadata) &&
          typeof object.metadata.resourceVersion === 'string'
        )
          this.#resourceVersion = object.metadata.resourceVersion;
        this.#bookmarks = true;
        return;
      case 'ERROR': {
        // The server's answer, in the stream: a failure like one answered to the request.
        const code = isObject(object) && typeof object.code === 'number' ? object.code : 500;
        if (code === 410) throw new Expired();
        throw new ApiError('WATCH', this.#options.path, code, object);
      }
      default:
        this.#skip(`of type ${JSON.stringify(event.type)}, none of a watch`, line);
    }
  }

  /** Whether `object` can be handled: an object whose metadata has a uid and a name; warns when not. */
  #identifiable(object: unknown, how: 'listed' | 'watched'): object is KubernetesObject {
    const metadata = isObject(object) ? object.metadata : undefined;
    if (
      isObject(metadata) &&
      typeof metadata.uid === 'string' &&
      metadata.uid &&
      typeof metadata.name === 'string'
    )
      return true;
    this.#skip(
      `${how} object without metadata.uid and metadata.name`,
      JSON.stringify(object) ?? String(object),
    );
    return false;
  }

  #skip(why: string, what: string): void {
    this.#options.logger.warning(`skipped an event the watch sent: ${why}`, {
      path: this.#options.path,
      event: what.length > 200 ? `${what.slice(0, 200)}…` : what,
    });
  }

  #deliver(type: WatchEventType, object: KubernetesObject): void {
    // The apiserver's bookkeeping of who set which field: often the larger part of an object, and read
    // by nothing in the gateway (handlers never get it either). controller-runtime drops it likewise.
    // Left out of a new metadata, not deleted: V8 keeps an object a property was deleted from as a hash
    // table, several times its size, and objects are kept by the thousand.
    if (object.metadata.managedFields) {
      const { managedFields: _managedFields, ...metadata } = object.metadata;
      object.metadata = metadata;
    }
    if (type === 'DELETED') this.#known.delete(object.metadata.uid);
    else this.#known.set(object.metadata.uid, remembered(object));
    this.#options.onEvent({ type, object });
  }
}

/** An object reduced to what a deletion found at a re-list is reported with. */
function remembered({ apiVersion, kind, metadata }: KubernetesObject): KubernetesObject {
  const { name, namespace, uid, resourceVersion, labels } = metadata;
  return {
    apiVersion,
    kind,
    metadata: {
      name,
      uid,
      resourceVersion,
      ...(namespace ? { namespace } : {}),
      ...(labels ? { labels } : {}),
    },
  };
}

function describeError(error: unknown): string {
  if (error instanceof Error)
    return error.cause instanceof Error ? `${error.message} (${error.cause.message})` : error.message;
  return String(error);
}
