import type { JSONWebKeySet } from 'jose';
import {
  encodeSecret,
  isLoopback,
  JWKS_URL_VARIABLE,
  JWKS_VARIABLE,
  parsePublicKeys,
  SECRET_VARIABLE,
  TrustError,
  type VerificationKeys,
} from '../protocol/index.ts';

/** What `operator()` may be given to verify with, instead of looking in the environment. */
export interface KeysOptions {
  /** The gateway's public keys, or the URL that serves them. */
  keys?: JSONWebKeySet | URL;
  /** A secret shared with the gateway (HS256), at least 32 bytes. */
  secret?: string | Uint8Array;
}

/** Read through globalThis so that no runtime's module has to be imported. */
interface Runtimes {
  process?: { env?: Record<string, string | undefined> };
  Deno?: { env: { get(name: string): string | undefined } };
}

/**
 * What requests are verified with, looked up per request: on Workers the configuration only arrives
 * with the request's `env`, and a mounted key file may be re-read into the environment (as `causeway
 * serve --jwks-file` does) when the gateway rotates its keys. First found wins: $CAUSEWAY_JWKS (the
 * gateway's public keys), $CAUSEWAY_JWKS_URL, $CAUSEWAY_SECRET (a secret shared with the gateway);
 * each from the Workers `env`, then the process's environment. An explicit option is checked at once,
 * so a bad one fails at start-up.
 */
export function keySource({ keys, secret }: KeysOptions = {}): (env: unknown) => VerificationKeys {
  if (keys !== undefined && secret !== undefined) {
    throw new TypeError("give the gateway's public keys or a shared secret, not both");
  }
  if (keys !== undefined || secret !== undefined) {
    const fixed =
      keys instanceof URL
        ? keysUrl(keys.href, 'the keys URL')
        : keys
          ? parsePublicKeys(JSON.stringify(keys))
          : encodeSecret(secret as string | Uint8Array);
    return () => fixed;
  }
  let lastText: string | undefined;
  let lastKeys: JSONWebKeySet | undefined;
  return (env) => {
    const jwks = lookup(env, JWKS_VARIABLE);
    if (jwks) {
      // Parsed again only when it changed: the same object keeps its imported keys cached.
      if (jwks !== lastText) [lastKeys, lastText] = [parseFrom(JWKS_VARIABLE, jwks), jwks];
      return lastKeys as JSONWebKeySet;
    }
    const url = lookup(env, JWKS_URL_VARIABLE);
    if (url) return keysUrl(url, JWKS_URL_VARIABLE);
    const secret = lookup(env, SECRET_VARIABLE);
    if (secret) return encodeSecret(secret);
    throw new Error(
      `no keys to verify requests with: set ${JWKS_VARIABLE} (the gateway's public keys), ${JWKS_URL_VARIABLE} or ${SECRET_VARIABLE}`,
    );
  };
}

function parseFrom(variable: string, text: string): JSONWebKeySet {
  try {
    return parsePublicKeys(text);
  } catch (error) {
    throw new TrustError(`${variable}: ${(error as Error).message}`);
  }
}

function keysUrl(text: string, what: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new TrustError(`${what} is not a URL: ${text}`);
  }
  if (url.protocol !== 'https:' && !isLoopback(url.hostname)) {
    throw new TrustError(`${what} must be https (plain http only on this host): ${text}`);
  }
  return url;
}

function lookup(env: unknown, name: string): string | undefined {
  const bound = typeof env === 'object' && env !== null ? (env as Record<string, unknown>)[name] : undefined;
  if (typeof bound === 'string' && bound) return bound;
  const runtimes = globalThis as Runtimes;
  return runtimes.process?.env?.[name] || runtimes.Deno?.env.get(name) || undefined;
}
