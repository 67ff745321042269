/** Login handlers' results, checked the same way by the SDK (for a clear error) and by the gateway (before use). */
import { isObject } from './json.ts';

const TEXTS = ['token', 'certificateData', 'keyData', 'caData'] as const;

/** What is wrong with `value` as Credentials; undefined when nothing is. */
export function credentialsProblem(value: unknown): string | undefined {
  if (!isObject(value)) return 'credentials must be an object with a server';
  const { server, insecure, expiration } = value;
  if (typeof server !== 'string' || !/^https?:\/\/[^/]/.test(server)) {
    return `"server" must be the API server's URL, e.g. https://10.0.0.1:6443, got ${JSON.stringify(server)}`;
  }
  for (const field of TEXTS) {
    if (value[field] !== undefined && (typeof value[field] !== 'string' || value[field] === '')) {
      return `"${field}" must be a non-empty string`;
    }
  }
  if ((value.certificateData === undefined) !== (value.keyData === undefined)) {
    return '"certificateData" and "keyData" go together';
  }
  if (value.token === undefined && value.certificateData === undefined) {
    return 'credentials need a "token", or "certificateData" and "keyData"';
  }
  if (insecure !== undefined && typeof insecure !== 'boolean') return '"insecure" must be true or false';
  if (expiration !== undefined && (typeof expiration !== 'string' || Number.isNaN(Date.parse(expiration)))) {
    return '"expiration" must be an ISO 8601 time';
  }
  return undefined;
}
