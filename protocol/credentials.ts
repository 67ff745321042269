/** Login handlers' results, checked the same way by the SDK (for a clear error) and by the gateway (before use). */
import { isObject } from './json.ts';
import { CREDENTIALS } from './schema/checks.ts';

const TEXTS = ['token', 'certificateData', 'keyData', 'caData'] as const;

/** What is wrong with `value` as Credentials; undefined when nothing is. */
export function credentialsProblem(value: unknown): string | undefined {
  if (!isObject(value)) return 'credentials must be an object with a server';
  const fields = CREDENTIALS;
  if (!fields.server.test(value.server)) {
    return `"server" must be ${fields.server.expected}, got ${JSON.stringify(value.server)}`;
  }
  for (const field of TEXTS) {
    if (value[field] !== undefined && !fields[field].test(value[field])) {
      return `"${field}" must be ${fields[field].expected}`;
    }
  }
  if ((value.certificateData === undefined) !== (value.keyData === undefined)) {
    return '"certificateData" and "keyData" go together';
  }
  if (value.token === undefined && value.certificateData === undefined) {
    return 'credentials need a "token", or "certificateData" and "keyData"';
  }
  for (const field of ['insecure', 'expiration'] as const) {
    if (value[field] !== undefined && !fields[field].test(value[field])) {
      return `"${field}" must be ${fields[field].expected}`;
    }
  }
  return undefined;
}
