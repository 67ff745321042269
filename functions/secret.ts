import { encodeSecret, SECRET_VARIABLE } from '../protocol/index.ts';

/** Read through globalThis so that no runtime's module has to be imported. */
interface Runtimes {
  process?: { env?: Record<string, string | undefined> };
  Deno?: { env: { get(name: string): string | undefined } };
}

/**
 * Where the signing secret comes from, looked up per request: on Workers it only arrives with the
 * request's `env`. An explicit secret is checked at once, so a bad one fails at start-up.
 */
export function secretSource(secret?: string | Uint8Array): (env: unknown) => Uint8Array {
  if (secret !== undefined) {
    const fixed = encodeSecret(secret);
    return () => fixed;
  }
  return (env) => {
    const found = fromBinding(env) || fromEnvironment();
    if (!found) throw new Error(`no signing secret configured: set ${SECRET_VARIABLE}`);
    return encodeSecret(found);
  };
}

function fromBinding(env: unknown): string | undefined {
  const value =
    typeof env === 'object' && env !== null ? (env as Record<string, unknown>)[SECRET_VARIABLE] : undefined;
  return typeof value === 'string' ? value : undefined;
}

function fromEnvironment(): string | undefined {
  const runtimes = globalThis as Runtimes;
  return runtimes.process?.env?.[SECRET_VARIABLE] || runtimes.Deno?.env.get(SECRET_VARIABLE);
}
