/**
 * The gateway's one way to talk to the Kubernetes API. client-node loads the kubeconfig and does
 * authentication (tokens, certificates, exec plugins, in-cluster accounts); the requests themselves go
 * through one pooled undici dispatcher, because client-node builds a new connection pool per call.
 * A client made from a login (a function service's login handler) logs in again when its credentials
 * are about to expire, and when the API answers 401. A view of it (`impersonating`) sends the same
 * requests on the same connections as a ServiceAccount, for what a function service asked to write.
 */
import type { RequestOptions } from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';
import { type Span, SpanKind } from '@opentelemetry/api';
import { type Dispatcher, request } from 'undici';
import type { Logger } from '../logging.ts';
import { type Backoff, backoffDelay, sleepUnlessWoken, spreadRetryAfter } from '../timing.ts';
import { inRecordedSpan, inSpan, serverAttributes } from '../tracing/spans.ts';
import { ApiError, isTransient } from './errors.ts';
import { ApiConnections, type LivenessTiming } from './liveness.ts';
import { ApiComeback, ApiUnreachable, waitsForComeback } from './reachability.ts';

export type PatchType = 'merge' | 'json' | 'apply';
const PATCH_CONTENT_TYPES: Record<PatchType, string> = {
  merge: 'application/merge-patch+json',
  json: 'application/json-patch+json',
  apply: 'application/apply-patch+yaml',
};

export interface RequestInit {
  method?: string;
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
  contentType?: string;
  headers?: Record<string, string>;
  signal?: AbortSignal;
}

/** Delays between tries of a request that failed transiently (429, 5xx, broken connections); then it gives up. */
const RETRY_DELAYS_MS = [250, 500, 1000, 2000, 4000, 8000];
const RETRY_BACKOFF: Backoff = { delays: RETRY_DELAYS_MS, jitter: true };

/**
 * Whether a create that failed may have been made all the same, so that trying it again would make it
 * twice (a generated name) or be answered 409 AlreadyExists: as client-go, a create is tried again only
 * when the apiserver said to (an answer with Retry-After: 429, a 503 while it starts) or when nothing
 * listened. The other writes are guarded (a resourceVersion, a patch of the same content), and their
 * callers handle the conflict; a create's callers see the error and look again.
 */
function mayHaveBeenCarriedOut(error: unknown): boolean {
  if (error instanceof ApiError) return error.retryAfterSeconds === undefined;
  return (error as NodeJS.ErrnoException).code !== 'ECONNREFUSED';
}

/** A ServiceAccount, as a scope or a FunctionService names it. */
export interface ServiceAccountName {
  namespace: string;
  name: string;
}

/** The user the apiserver knows a ServiceAccount as (its tokens authenticate as this). */
export function serviceAccountUser({ namespace, name }: ServiceAccountName): string {
  return `system:serviceaccount:${namespace}:${name}`;
}

/** Credentials got by logging in, as a kubeconfig, and when they expire (ms since the epoch). */
export interface LoggedIn {
  config: KubeConfig;
  expiresAt?: number;
}

/** How the client logs in, at first and again. */
export type Login = () => Promise<LoggedIn>;

/** Told of every request to the API: its method, its path, and its status (undefined: no answer came, for `error`). */
export type RequestObserver = (
  method: string,
  path: string,
  status: number | undefined,
  error?: unknown,
) => void;

/** What the client's connections to the API server say when they replace a silent one, and how soon. */
export interface ConnectionOptions {
  logger?: Logger;
  liveness?: LivenessTiming;
}

/** Logging in again failed. The login retried what it could, so the request is not retried for it. */
export class LoginFailed extends Error {
  override name = 'LoginFailed';
}

/** A kubeconfig and the connections made with its TLS material. */
interface Session {
  config: KubeConfig;
  server: string;
  dispatcher: Dispatcher | undefined;
  watchDispatcher: Dispatcher | undefined;
  /** For requests with a body: HTTP/1.1 (see ApiConnections.writes). */
  writeDispatcher: Dispatcher | undefined;
  obtainedAt: number;
  expiresAt?: number;
}

/**
 * Whether credentials are due to be renewed: a little before they expire (a tenth of their life, at
 * most 30 s), so that no request goes out with credentials about to lapse. Pure.
 */
export function renewalDue(obtainedAt: number, expiresAt: number, now: number): boolean {
  return now >= expiresAt - Math.min(30_000, (expiresAt - obtainedAt) / 10);
}

export class KubeClient {
  readonly server: string;
  /** The ServiceAccount this view writes as; undefined for the gateway's own identity. */
  readonly impersonated: ServiceAccountName | undefined;
  /** The client whose session, logins and connections its views share (itself for the gateway's own). */
  readonly #root: KubeClient;
  /** Its views by account, made once each. */
  readonly #views = new Map<string, KubeClient>();
  #session: Session;
  readonly #login: Login | undefined;
  #renewing: Promise<Session> | undefined;
  readonly #observe: RequestObserver | undefined;
  readonly #connections: ConnectionOptions;
  readonly #comeback = new ApiComeback(() => this.#readiness());

  private constructor(
    session: Session,
    login: Login | undefined,
    observe: RequestObserver | undefined,
    connections: ConnectionOptions,
    root?: { client: KubeClient; account: ServiceAccountName },
  ) {
    this.#session = session;
    this.server = session.server;
    this.#login = login;
    this.#observe = observe;
    this.#connections = connections;
    this.#root = root?.client ?? this;
    this.impersonated = root?.account;
  }

  /**
   * The same client acting as a ServiceAccount: its requests carry `Impersonate-User`, so the apiserver
   * authorizes and admits them as that account (with its groups, which it adds itself for a
   * ServiceAccount when none are given: no right to impersonate groups is needed). One session, one
   * set of connections, one login for every view.
   */
  impersonating(account: ServiceAccountName): KubeClient {
    const root = this.#root;
    const user = serviceAccountUser(account);
    let view = root.#views.get(user);
    if (!view) {
      view = new KubeClient(root.#session, root.#login, root.#observe, root.#connections, {
        client: root,
        account: { namespace: account.namespace, name: account.name },
      });
      root.#views.set(user, view);
    }
    return view;
  }

  static async fromConfig(
    config: KubeConfig,
    observe?: RequestObserver,
    connections: ConnectionOptions = {},
  ): Promise<KubeClient> {
    return new KubeClient(await sessionOf(config, connections), undefined, observe, connections);
  }

  /** A client whose credentials come from `login`, asked again before they expire and after a 401. */
  static async fromLogin(
    login: Login,
    observe?: RequestObserver,
    connections: ConnectionOptions = {},
  ): Promise<KubeClient> {
    const { config, expiresAt } = await login();
    return new KubeClient(await sessionOf(config, connections, expiresAt), login, observe, connections);
  }

  /** Sends one request and parses the JSON answer; retries transient failures with backoff. */
  async request<T>(path: string, init: RequestInit = {}): Promise<T> {
    let comingBack = false;
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.#authenticated((session) => this.#once<T>(session, path, init));
      } catch (error) {
        if (!isTransient(error) || error instanceof LoginFailed || init.signal?.aborted) throw error;
        if (init.method === 'POST' && mayHaveBeenCarriedOut(error)) throw error;
        comingBack = waitsForComeback(error, comingBack);
        if (attempt >= RETRY_DELAYS_MS.length) throw comingBack ? new ApiUnreachable(error as Error) : error;
        const retryAfterMs = error instanceof ApiError ? (error.retryAfterSeconds ?? 0) * 1000 : 0;
        const woken = await sleepUnlessWoken(
          Math.max(backoffDelay(RETRY_BACKOFF, attempt), spreadRetryAfter(retryAfterMs)),
          comingBack ? (over) => this.whenBack(over) : undefined,
          init.signal,
        );
        // Back after an outage: the tries that found no one count for nothing against what it answers now.
        if (woken) {
          attempt = -1;
          comingBack = false;
        }
      }
    }
  }

  /**
   * Resolves once the API is back (see ApiComeback), or when `signal` aborts: for what found no one to
   * answer, so that it goes again as soon as the API is back.
   */
  whenBack(signal?: AbortSignal): Promise<void> {
    return this.#root.#comeback.wait(signal);
  }

  /** The API's readiness, asked once: its status, or a rejection when nothing answered. */
  async #readiness(): Promise<number> {
    try {
      await this.#authenticated((session) => this.#send(session, '/readyz', {}, 'GET'));
      return 200;
    } catch (error) {
      if (error instanceof ApiError) return error.status;
      throw error;
    }
  }

  get<T>(path: string, query?: RequestInit['query']): Promise<T> {
    return this.request<T>(path, { query });
  }

  patch<T>(path: string, type: PatchType, body: unknown, query?: RequestInit['query']): Promise<T> {
    return this.request<T>(path, { method: 'PATCH', contentType: PATCH_CONTENT_TYPES[type], body, query });
  }

  /** Opens a streaming GET (for watches); the caller reads and closes the body. */
  stream(path: string, init: RequestInit): Promise<Dispatcher.ResponseData['body']> {
    return this.#authenticated(async (session) => {
      const response = await this.#observed('GET', path, () =>
        this.#headers(session, init).then((headers) =>
          request(this.url(path, init.query), {
            method: 'GET',
            headers,
            dispatcher: session.watchDispatcher,
            signal: init.signal,
          }),
        ),
      );
      if (response.statusCode !== 200) {
        throw new ApiError(
          'GET',
          path,
          response.statusCode,
          await readBody(response.body),
          retryAfter(response),
        );
      }
      return response.body;
    });
  }

  url(path: string, query?: RequestInit['query']): string {
    const url = new URL(this.server + path);
    for (const [key, value] of Object.entries(query ?? {})) {
      if (value !== undefined) url.searchParams.set(key, String(value));
    }
    return url.toString();
  }

  /** Runs `send` with the session; where the client logs in, once more with new credentials after a 401. */
  async #authenticated<T>(send: (session: Session) => Promise<T>): Promise<T> {
    const root = this.#root;
    const session = await root.#current();
    try {
      return await send(session);
    } catch (error) {
      if (!root.#login || !(error instanceof ApiError && error.status === 401)) throw error;
      return send(await root.#renew(session));
    }
  }

  async #current(): Promise<Session> {
    const session = this.#session;
    const { expiresAt, obtainedAt } = session;
    if (this.#login && expiresAt !== undefined && renewalDue(obtainedAt, expiresAt, Date.now())) {
      return this.#renew(session);
    }
    return session;
  }

  /** Logs in again, once however many requests found `stale` wanting. */
  #renew(stale: Session): Promise<Session> {
    if (this.#session !== stale) return Promise.resolve(this.#session);
    const login = this.#login as Login;
    this.#renewing ??= (async () => {
      let next: Session;
      try {
        const { config, expiresAt } = await login();
        next = await sessionOf(config, this.#connections, expiresAt);
      } catch (error) {
        throw new LoginFailed(`logging in again failed: ${(error as Error).message}`);
      }
      if (next.server !== this.server) {
        await closeSession(next);
        throw new LoginFailed(
          `the login gave credentials for ${next.server}, not for ${this.server}, the API server the gateway ` +
            'started with: restart it to change clusters',
        );
      }
      this.#session = next;
      closeSession(stale).catch(() => {}); // once the requests under way with it are done
      return next;
    })().finally(() => {
      this.#renewing = undefined;
    });
    return this.#renewing;
  }

  /** The request's headers: its credentials, and whom it acts as when this is a view that impersonates. */
  async #headers(session: Session, init: RequestInit): Promise<Record<string, string>> {
    const headers = await headersOf(session, init);
    if (this.impersonated) headers['impersonate-user'] = serviceAccountUser(this.impersonated);
    return headers;
  }

  /** Sends, and tells the observer the status, or that no answer came. */
  async #observed(
    method: string,
    path: string,
    send: () => Promise<Dispatcher.ResponseData>,
  ): Promise<Dispatcher.ResponseData> {
    let response: Dispatcher.ResponseData;
    try {
      response = await send();
    } catch (error) {
      this.#observe?.(method, path, undefined, error);
      throw error;
    }
    this.#observe?.(method, path, response.statusCode);
    return response;
  }

  /**
   * One try of a request. A write made within a recorded span (a cycle's) is a span of its own, an HTTP
   * client's; reads are not, nor are writes outside one (Leases renewed, say), which would each start
   * a trace of their own.
   */
  #once<T>(session: Session, path: string, init: RequestInit): Promise<T> {
    const method = init.method ?? 'GET';
    if (method === 'GET' || !inRecordedSpan()) return this.#send(session, path, init, method);
    const { template, namespace } = pathTemplate(path);
    const attributes = {
      'http.request.method': method,
      'url.full': this.url(path, init.query),
      'url.template': template,
      ...serverAttributes(this.server),
      ...(namespace === undefined ? {} : { 'k8s.namespace.name': namespace }),
    };
    return inSpan(`${method} ${template}`, { kind: SpanKind.CLIENT, attributes }, (span) =>
      this.#send(session, path, init, method, span),
    );
  }

  async #send<T>(session: Session, path: string, init: RequestInit, method: string, span?: Span): Promise<T> {
    const hasBody = init.body !== undefined;
    const headers = await this.#headers(session, {
      ...init,
      contentType: init.contentType ?? (hasBody ? 'application/json' : ''),
    });
    const response = await this.#observed(method, path, () =>
      request(this.url(path, init.query), {
        method,
        headers,
        body: hasBody ? JSON.stringify(init.body) : undefined,
        dispatcher: hasBody ? session.writeDispatcher : session.dispatcher,
        signal: init.signal,
      }),
    );
    span?.setAttribute('http.response.status_code', response.statusCode);
    const body = await readBody(response.body);
    if (response.statusCode >= 300) {
      const refusedAs =
        this.impersonated && response.statusCode === 403
          ? `${method === 'GET' ? 'read' : 'written'} as ${serviceAccountUser(this.impersonated)} (--impersonate): \`causeway rbac --impersonate\` prints the Role it needs, and the gateway's right to impersonate it`
          : undefined;
      throw new ApiError(method, path, response.statusCode, body, retryAfter(response), refusedAs);
    }
    return body as T;
  }
}

/**
 * An API path with its namespace and name as placeholders (`/apis/g/v/namespaces/{namespace}/plural/{name}/status`),
 * as OpenTelemetry's `url.template`, which names a span; and the namespace it names, if any.
 */
export function pathTemplate(path: string): { template: string; namespace?: string } {
  const parts = path.split('?')[0]?.split('/') ?? [];
  // After /api/v1 or /apis/group/version: [namespaces, ns,] plural[, name[, subresource]].
  const prefix = parts[1] === 'api' ? 3 : 4;
  const rest = parts.slice(prefix);
  const namespaced = rest[0] === 'namespaces' && rest.length > 2;
  const namespace = namespaced ? rest[1] : undefined;
  const nameAt = namespaced ? 3 : 1;
  if (namespaced) rest[1] = '{namespace}';
  if (rest.length > nameAt) rest[nameAt] = '{name}';
  const template = [...parts.slice(0, prefix), ...rest].join('/');
  return namespace === undefined ? { template } : { template, namespace };
}

async function sessionOf(
  config: KubeConfig,
  connections: ConnectionOptions,
  expiresAt?: number,
): Promise<Session> {
  const cluster = config.getCurrentCluster();
  if (!cluster) throw new Error('the kubeconfig has no current cluster: set a current-context');
  const tls: RequestOptions = {};
  await config.applyToHTTPSOptions(tls);
  const options = config.createDispatcherOptions(cluster, {
    ca: tls.ca,
    cert: tls.cert,
    key: tls.key,
    ...(tls.rejectUnauthorized === undefined ? {} : { rejectUnauthorized: tls.rejectUnauthorized }),
    ...(tls.servername === undefined ? {} : { servername: tls.servername }),
  });
  const server = cluster.server.replace(/\/+$/, '');
  let dispatcher: Dispatcher | undefined;
  let watchDispatcher: Dispatcher | undefined;
  let writeDispatcher: Dispatcher | undefined;
  switch (options.type) {
    case 'agent':
    case 'proxy': {
      // HTTP/2: one connection carries every read; measured cheaper in CPU than a pool of HTTP/1.1 ones.
      // Writes (a request with a body) go over HTTP/1.1 connections of their own: see ApiConnections.writes.
      // Watches stream on a connection of their own (HTTP/2 too: undici 8 offers it unless told not to).
      // Sharing the requests' connection, a burst of events waited on its flow control behind the other
      // requests, the apiserver's buffer for the watcher (about 200 events) filled, and it closed the
      // watch: 20 to 38 times in one 10,000-object backlog, and none with a connection of its own.
      // Both are PINGed, and replaced when silent (liveness.ts); through a proxy (`proxy-url`) too.
      const apiConnections = new ApiConnections(server, options, connections.logger, connections.liveness);
      dispatcher = apiConnections.requests;
      watchDispatcher = apiConnections.watches;
      writeDispatcher = apiConnections.writes;
      break;
    }
    case 'socks':
      throw new Error(
        `SOCKS proxies (${options.uri}) are not supported by the gateway; use an HTTP(S) proxy`,
      );
    case 'none':
      dispatcher = undefined;
  }
  return {
    config,
    server,
    dispatcher,
    watchDispatcher: watchDispatcher ?? dispatcher,
    writeDispatcher: writeDispatcher ?? dispatcher,
    obtainedAt: Date.now(),
    ...(expiresAt === undefined ? {} : { expiresAt }),
  };
}

/** Closes a session's connections once the requests under way on them are done. */
async function closeSession(session: Session): Promise<void> {
  const dispatchers = new Set([session.dispatcher, session.watchDispatcher, session.writeDispatcher]);
  await Promise.all([...dispatchers].map((dispatcher) => dispatcher?.close()));
}

async function headersOf(session: Session, init: RequestInit): Promise<Record<string, string>> {
  // Asked per request: exec plugins and bound service-account tokens rotate.
  const auth: RequestOptions = { headers: {} };
  await session.config.applyToHTTPSOptions(auth);
  const headers: Record<string, string> = { accept: 'application/json', ...init.headers };
  for (const [key, value] of Object.entries(auth.headers ?? {})) headers[key.toLowerCase()] = String(value);
  if (init.contentType) headers['content-type'] = init.contentType;
  return headers;
}

async function readBody(body: Dispatcher.ResponseData['body']): Promise<unknown> {
  const text = await body.text();
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function retryAfter(response: Dispatcher.ResponseData): number | undefined {
  const value = Number(response.headers['retry-after']);
  return Number.isFinite(value) && value > 0 ? value : undefined;
}
