/**
 * Which namespaces a gateway serves: names, globs (`team-*`) and negations (`!kube-*`), as Kopf's
 * `--namespace` takes them. Exact names are served as given; patterns make the gateway watch the
 * namespaces themselves and start or stop serving them as they appear and disappear.
 */
import type { KubernetesObject } from '../../protocol/index.ts';
import type { KubeClient } from '../kube/client.ts';
import { Watcher } from '../kube/watcher.ts';
import type { Logger } from '../logging.ts';
import type { Settings } from '../settings.ts';

const GLOB = /[*?]/;

/** `*` is any run of characters, `?` any one; everything else stands for itself. */
function globToRegExp(glob: string): RegExp {
  const source = [...glob]
    .map((char) => (char === '*' ? '.*' : char === '?' ? '.' : char.replace(/[.+^${}()|[\]\\]/g, '\\$&')))
    .join('');
  return new RegExp(`^${source}$`);
}

export interface NamespaceSelection {
  /** Exact names, when no pattern needs the namespaces watched. */
  names?: readonly string[];
  /** Otherwise: whether a namespace is served. */
  matches(name: string): boolean;
}

export function selectNamespaces(patterns: readonly string[]): NamespaceSelection {
  const positive = patterns.filter((pattern) => !pattern.startsWith('!'));
  const negative = patterns
    .filter((pattern) => pattern.startsWith('!'))
    .map((pattern) => globToRegExp(pattern.slice(1)));
  const included = positive.map(globToRegExp);
  const matches = (name: string) =>
    (included.length === 0 || included.some((pattern) => pattern.test(name))) &&
    !negative.some((pattern) => pattern.test(name));
  const exact =
    negative.length === 0 && positive.length > 0 && !positive.some((pattern) => GLOB.test(pattern));
  return exact ? { names: positive, matches } : { matches };
}

export interface NamespaceListener {
  added(namespace: string): void;
  removed(namespace: string): void;
}

/** Watches namespaces and tells listeners when a served one appears or is gone. */
export class NamespaceWatch {
  readonly #active = new Set<string>();
  readonly #listeners: NamespaceListener[] = [];
  readonly #watcher: Watcher;

  constructor(
    client: KubeClient,
    selection: NamespaceSelection,
    logger: Logger,
    settings: Settings['watching'],
  ) {
    this.#watcher = new Watcher({
      client,
      path: '/api/v1/namespaces',
      logger,
      settings,
      onEvent: ({ type, object }) =>
        this.#update(type === 'DELETED' ? undefined : object, object.metadata.name, selection),
    });
  }

  start(): void {
    this.#watcher.start();
  }

  /** Tells `listener` of every served namespace now and as they come and go, until the returned function is called. */
  subscribe(listener: NamespaceListener): () => void {
    this.#listeners.push(listener);
    for (const namespace of this.#active) listener.added(namespace);
    return () => {
      const index = this.#listeners.indexOf(listener);
      if (index >= 0) this.#listeners.splice(index, 1);
    };
  }

  stop(): Promise<void> {
    return this.#watcher.stop();
  }

  #update(object: KubernetesObject | undefined, name: string, selection: NamespaceSelection): void {
    const served = object !== undefined && selection.matches(name);
    if (served && !this.#active.has(name)) {
      this.#active.add(name);
      for (const listener of this.#listeners) listener.added(name);
    } else if (!served && this.#active.delete(name)) {
      for (const listener of this.#listeners) listener.removed(name);
    }
  }
}
