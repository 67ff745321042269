/**
 * The gateway's side of one function service: learns its name (the audience to sign for) from the
 * unsigned health check, fetches its manifest, and sends signed invocations with a deadline.
 */
import { Agent, type Dispatcher, request } from 'undici';
import {
  type InvocationRequest,
  type InvocationResponse,
  type Manifest,
  PATHS,
  signRequest,
} from '../../protocol/index.ts';
import { ProtocolError, parseHealth, parseInvocationResponse, parseManifest } from './validation.ts';

export interface FunctionServiceOptions {
  url: string;
  secret: Uint8Array;
  /** How long one invocation may take before the gateway gives up on it. */
  timeoutMs?: number;
}

/** The service could not be asked or did not answer usably; the handlers are retried later. */
export class ServiceError extends Error {
  override name = 'ServiceError';
}

const DEFAULT_TIMEOUT_MS = 30_000;
const encoder = new TextEncoder();

export class FunctionService {
  readonly url: string;
  readonly manifest: Manifest;
  readonly unknownKinds: string[];
  readonly timeoutMs: number;
  readonly #secret: Uint8Array;
  readonly #dispatcher: Dispatcher;

  private constructor(
    options: FunctionServiceOptions,
    dispatcher: Dispatcher,
    parsed: ReturnType<typeof parseManifest>,
  ) {
    this.url = options.url;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.#secret = options.secret;
    this.#dispatcher = dispatcher;
    this.manifest = parsed.manifest;
    this.unknownKinds = parsed.unknownKinds;
  }

  get name(): string {
    return this.manifest.name;
  }

  static async connect(options: FunctionServiceOptions): Promise<FunctionService> {
    const url = options.url.replace(/\/+$/, '');
    const dispatcher = new Agent({ keepAliveTimeout: 30_000, connections: 128 });
    const call = (path: string, audience: string | undefined) =>
      send(dispatcher, url, path, 'GET', new Uint8Array(), audience, options.secret, DEFAULT_TIMEOUT_MS);
    const health = parseHealth(await call(PATHS.health, undefined));
    const parsed = parseManifest(await call(PATHS.manifest, health.name));
    if (parsed.manifest.name !== health.name) {
      throw new ProtocolError(
        `${url} calls itself "${health.name}" but its manifest says "${parsed.manifest.name}"`,
      );
    }
    return new FunctionService({ ...options, url }, dispatcher, parsed);
  }

  async invoke(invocation: InvocationRequest): Promise<InvocationResponse> {
    const body = encoder.encode(JSON.stringify(invocation));
    const answer = await send(
      this.#dispatcher,
      this.url,
      PATHS.invoke,
      'POST',
      body,
      this.name,
      this.#secret,
      this.timeoutMs,
    );
    return parseInvocationResponse(
      answer,
      invocation.handlers.map((handler) => handler.id),
    );
  }

  async close(): Promise<void> {
    await this.#dispatcher.close();
  }
}

async function send(
  dispatcher: Dispatcher,
  base: string,
  path: string,
  method: 'GET' | 'POST',
  body: Uint8Array,
  audience: string | undefined,
  secret: Uint8Array,
  timeoutMs: number,
): Promise<unknown> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (method === 'POST') headers['content-type'] = 'application/json';
  if (audience !== undefined) {
    headers.authorization = `Bearer ${await signRequest(secret, { audience, method, path, body })}`;
  }
  let status: number;
  let text: string;
  try {
    const response = await request(`${base}${path}`, {
      method,
      headers,
      body: method === 'POST' ? body : undefined,
      dispatcher,
      signal: AbortSignal.timeout(timeoutMs),
    });
    status = response.statusCode;
    text = await response.body.text();
  } catch (error) {
    const reason =
      error instanceof Error && error.name === 'TimeoutError'
        ? `no answer within ${timeoutMs} ms`
        : describe(error);
    throw new ServiceError(`${method} ${base}${path}: ${reason}`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new ServiceError(`${method} ${base}${path}: ${status}, not JSON: ${text.slice(0, 200)}`);
  }
  if (status !== 200) {
    const message = (parsed as { error?: unknown })?.error;
    throw new ServiceError(
      `${method} ${base}${path}: ${status} ${typeof message === 'string' ? message : text.slice(0, 200)}`,
    );
  }
  return parsed;
}

function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause as { code?: string; message?: string } | undefined;
  return cause?.code ?? cause?.message ?? error.message;
}
