/**
 * The values flags take, read and checked: a UsageError that names the flag for one that cannot be.
 * Shared by every command's options.
 */
import type { SecretName } from '../kube/secrets.ts';
import { UsageError } from './command-line.ts';

/** What a namespace's name may be: a DNS label. */
export const DNS_LABEL = /^(?=.{1,63}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
/** What an annotation's prefix may be: a DNS subdomain. */
export const DNS_SUBDOMAIN = /^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

export function namespacedName(value: string, flag: string): SecretName {
  const match = /^([a-z0-9-]+)\/([a-z0-9.-]+)$/.exec(value);
  if (!match) throw new UsageError(`${flag} expects namespace/name, got "${value}"`);
  return { namespace: match[1] as string, name: match[2] as string };
}

export function signedInteger(value: string, flag: string): number {
  const number = Number(value);
  if (!/^-?\d+$/.test(value) || !Number.isSafeInteger(number))
    throw new UsageError(`${flag} expects a whole number, got "${value}"`);
  return number;
}

/** Decimal digits only: Number() also reads `0x10`, `1e3`, ` 8` and `` (0), none of which says a whole number. */
export function integer(value: string, flag: string): number {
  const number = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(number))
    throw new UsageError(`${flag} expects a whole number, got "${value}"`);
  return number;
}

export function oneOf<T extends string>(value: string, allowed: readonly T[], flag: string): T {
  if (!allowed.includes(value as T)) {
    const choices = `${allowed.slice(0, -1).join(', ')} or ${allowed.at(-1)}`;
    throw new UsageError(`${flag} expects ${choices}, got "${value}"`);
  }
  return value as T;
}
