/**
 * The tests of the protocol's shapes, written from them by `npm run schemas` (deploy/schemas.ts): do
 * not edit. Each is plain code, as a hand-written check would be.
 */
import { isObject } from '../json.ts';
import { isDelaySeconds } from '../limits.ts';

/** A test of a value, and what an error says the value must be. */
export interface Check {
  test(value: unknown): boolean;
  expected: string;
}

const PATTERN0 =
  /^((?=[^/]{1,253}\/)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const PATTERN1 = /^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$/;
const PATTERN2 =
  /^((?=[^/]{1,253}\/)[A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?(\.[A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const PATTERN3 = /^\S+$/;
const PATTERN4 = /^(\*|[a-z0-9]([-a-z0-9]*[a-z0-9])?)$/;
const PATTERN5 = /^[^.]+(\.[^.]+)*$/;
const PATTERN6 = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const PATTERN7 = /^https?:\/\/[^/]/;
const PATTERN8 = /^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;

export const META_MATCH: Check = {
  test: (value: unknown): boolean => typeof value === 'string' || test0(value) || test1(value),
  expected: 'a value, {"present": true} or {"absent": true}',
};
export const LABEL_KEY: Check = {
  test: (value: unknown): boolean => typeof value === 'string' && PATTERN0.test(value),
  expected:
    "a label's key ([prefix/]name: a DNS subdomain, then 63 letters, digits, '-', '_' or '.' at most)",
};
export const LABEL_MATCH: Check = {
  test: (value: unknown): boolean =>
    (typeof value === 'string' && PATTERN1.test(value)) || test0(value) || test1(value),
  expected:
    "a label's value (63 letters, digits, '-', '_' or '.' at most, a letter or digit at each end), {\"present\": true} or {\"absent\": true}",
};
export const ANNOTATION_KEY: Check = {
  test: (value: unknown): boolean => typeof value === 'string' && PATTERN2.test(value),
  expected:
    "an annotation's key ([prefix/]name: a DNS subdomain, then 63 letters, digits, '-', '_' or '.' at most)",
};
export const HANDLER_ID: Check = {
  test: (value: unknown): boolean =>
    typeof value === 'string' && value.length >= 1 && value.length <= 253 && PATTERN3.test(value),
  expected: 'a word of 1 to 253 characters, without whitespace',
};
export const LOG_LINE: Check = { test: (value: unknown): boolean => test2(value), expected: 'an object' };
export const EVENT_HEAD: Check = { test: (value: unknown): boolean => test3(value), expected: 'an object' };
export const OBJECT_REFERENCE: Check = {
  test: (value: unknown): boolean => test4(value),
  expected: 'an object',
};
export const OBJECT_TO_APPLY: Check = {
  test: (value: unknown): boolean => test5(value),
  expected: 'an object',
};
export const ADMISSION_TIMEOUT: Check = {
  test: (value: unknown): boolean =>
    Number.isInteger(value) && (value as number) >= 1 && (value as number) <= 30,
  expected: 'a whole number of seconds, 1 to 30',
};
export const OPTIONS = {
  retries: {
    test: (value: unknown): boolean => Number.isInteger(value) && (value as number) >= 1,
    expected: 'an integer ≥ 1',
  },
  timeout: {
    test: (value: unknown): boolean => isDelaySeconds(value, { positive: true }),
    expected: 'a number of seconds above 0, at most 31536000 (a year)',
  },
  backoff: {
    test: (value: unknown): boolean => isDelaySeconds(value),
    expected: 'a number of seconds from 0 to 31536000 (a year)',
  },
  optional: { test: (value: unknown): boolean => typeof value === 'boolean', expected: 'true or false' },
  deleted: { test: (value: unknown): boolean => typeof value === 'boolean', expected: 'true or false' },
  interval: {
    test: (value: unknown): boolean => isDelaySeconds(value, { positive: true }),
    expected: 'a number of seconds above 0, at most 31536000 (a year)',
  },
  idle: {
    test: (value: unknown): boolean => isDelaySeconds(value),
    expected: 'a number of seconds from 0 to 31536000 (a year)',
  },
  initialDelay: {
    test: (value: unknown): boolean => isDelaySeconds(value),
    expected: 'a number of seconds from 0 to 31536000 (a year)',
  },
  cancellationTimeout: {
    test: (value: unknown): boolean => isDelaySeconds(value),
    expected: 'a number of seconds from 0 to 31536000 (a year)',
  },
  sharp: { test: (value: unknown): boolean => typeof value === 'boolean', expected: 'true or false' },
  operations: {
    test: (value: unknown): boolean => test6(value),
    expected: 'a list of CREATE, UPDATE, DELETE and CONNECT',
  },
  subresource: {
    test: (value: unknown): boolean => typeof value === 'string' && value.length >= 1 && PATTERN4.test(value),
    expected: "a subresource's name (status, scale), or * for all",
  },
  persistent: { test: (value: unknown): boolean => typeof value === 'boolean', expected: 'true or false' },
  sideEffects: { test: (value: unknown): boolean => typeof value === 'boolean', expected: 'true or false' },
  ignoreFailures: {
    test: (value: unknown): boolean => typeof value === 'boolean',
    expected: 'true or false',
  },
  indexes: { test: (value: unknown): boolean => test7(value), expected: 'a list of index ids' },
} satisfies Record<string, Check>;
export const FILTERS = {
  field: {
    test: (value: unknown): boolean => typeof value === 'string' && PATTERN5.test(value),
    expected: 'a dotted path (spec.a.b)',
  },
  value: {
    test: (value: unknown): boolean =>
      (isObject(value) && Object.hasOwn(value, 'equals')) || test0(value) || test1(value),
    expected: '{"equals": …}, {"present": true} or {"absent": true}',
  },
  old: {
    test: (value: unknown): boolean =>
      (isObject(value) && Object.hasOwn(value, 'equals')) || test0(value) || test1(value),
    expected: '{"equals": …}, {"present": true} or {"absent": true}',
  },
  new: {
    test: (value: unknown): boolean =>
      (isObject(value) && Object.hasOwn(value, 'equals')) || test0(value) || test1(value),
    expected: '{"equals": …}, {"present": true} or {"absent": true}',
  },
  when: { test: (value: unknown): boolean => typeof value === 'boolean', expected: 'true or false' },
} satisfies Record<string, Check>;
export const RESOURCE_SELECTOR = {
  name: {
    test: (value: unknown): boolean => typeof value === 'string' && value.length >= 1,
    expected: 'a non-empty string',
  },
  category: {
    test: (value: unknown): boolean => typeof value === 'string' && value.length >= 1,
    expected: 'a non-empty string',
  },
  group: { test: (value: unknown): boolean => typeof value === 'string', expected: 'a string' },
  version: { test: (value: unknown): boolean => typeof value === 'string', expected: 'a string' },
} satisfies Record<string, Check>;
export const MANIFEST = {
  name: {
    test: (value: unknown): boolean => typeof value === 'string' && PATTERN6.test(value),
    expected:
      'a DNS-1123 label: up to 63 lowercase letters, digits and "-", starting and ending with a letter or digit',
  },
  sessions: { test: (value: unknown): boolean => typeof value === 'boolean', expected: 'a boolean' },
  indexVersions: { test: (value: unknown): boolean => typeof value === 'boolean', expected: 'a boolean' },
  batches: { test: (value: unknown): boolean => typeof value === 'boolean', expected: 'a boolean' },
} satisfies Record<string, Check>;
export const INVOCATION_RESPONSE = {
  memo: { test: (value: unknown): boolean => isObject(value), expected: 'an object' },
} satisfies Record<string, Check>;
export const EFFECTS = {
  patch: { test: (value: unknown): boolean => isObject(value), expected: 'a JSON merge patch (an object)' },
  requeueAfter: {
    test: (value: unknown): boolean => isDelaySeconds(value, { positive: true }),
    expected: 'a number of seconds above 0, at most 31536000 (a year)',
  },
  roundEnded: { test: (value: unknown): boolean => typeof value === 'boolean', expected: 'true or false' },
  warnings: { test: (value: unknown): boolean => test8(value), expected: 'a list of strings' },
} satisfies Record<string, Check>;
export const TEMPORARY = {
  message: { test: (value: unknown): boolean => typeof value === 'string', expected: 'a string' },
  delay: {
    test: (value: unknown): boolean => isDelaySeconds(value),
    expected: 'a number of seconds from 0 to 31536000 (a year)',
  },
} satisfies Record<string, Check>;
export const DENIED = {
  message: { test: (value: unknown): boolean => typeof value === 'string', expected: 'a string' },
  code: {
    test: (value: unknown): boolean =>
      Number.isInteger(value) && (value as number) >= 400 && (value as number) <= 599,
    expected: 'an integer ≥ 400',
  },
} satisfies Record<string, Check>;
export const CREDENTIALS = {
  server: {
    test: (value: unknown): boolean => typeof value === 'string' && PATTERN7.test(value),
    expected: "the API server's URL, e.g. https://10.0.0.1:6443",
  },
  token: {
    test: (value: unknown): boolean => typeof value === 'string' && value.length >= 1,
    expected: 'a non-empty string',
  },
  certificateData: {
    test: (value: unknown): boolean => typeof value === 'string' && value.length >= 1,
    expected: 'a non-empty string',
  },
  keyData: {
    test: (value: unknown): boolean => typeof value === 'string' && value.length >= 1,
    expected: 'a non-empty string',
  },
  caData: {
    test: (value: unknown): boolean => typeof value === 'string' && value.length >= 1,
    expected: 'a non-empty string',
  },
  insecure: { test: (value: unknown): boolean => typeof value === 'boolean', expected: 'true or false' },
  expiration: {
    test: (value: unknown): boolean => typeof value === 'string' && !Number.isNaN(Date.parse(value)),
    expected: 'an ISO 8601 time',
  },
} satisfies Record<string, Check>;
export const ERROR_RESPONSE = {
  missingHandlers: { test: (value: unknown): boolean => test9(value), expected: 'a list' },
} satisfies Record<string, Check>;
export const INVOCATION_REQUEST = {
  memo: { test: (value: unknown): boolean => isObject(value), expected: 'an object' },
  indexes: { test: (value: unknown): boolean => test10(value), expected: 'an object' },
  indexVersions: { test: (value: unknown): boolean => test13(value), expected: 'an object' },
  traceparent: {
    test: (value: unknown): boolean => typeof value === 'string' && PATTERN8.test(value),
    expected: 'a string',
  },
  event: {
    test: (value: unknown): boolean => value === 'ADDED' || value === 'MODIFIED' || value === 'DELETED',
    expected: 'one of ADDED, MODIFIED, DELETED',
  },
  stop: {
    test: (value: unknown): boolean =>
      value === 'resource-deleted' ||
      value === 'filters-mismatch' ||
      value === 'operator-exiting' ||
      value === 'round-ended' ||
      value === 'cancelled',
    expected: 'one of resource-deleted, filters-mismatch, operator-exiting, round-ended, cancelled',
  },
  stopped: {
    test: (value: unknown): boolean =>
      value === 'resource-deleted' ||
      value === 'filters-mismatch' ||
      value === 'operator-exiting' ||
      value === 'round-ended' ||
      value === 'cancelled',
    expected: 'one of resource-deleted, filters-mismatch, operator-exiting, round-ended, cancelled',
  },
} satisfies Record<string, Check>;
export const DUE_HANDLER = {
  retry: {
    test: (value: unknown): boolean => Number.isInteger(value) && (value as number) >= 0,
    expected: 'a non-negative integer',
  },
  started: {
    test: (value: unknown): boolean => typeof value === 'string' && !Number.isNaN(Date.parse(value)),
    expected: 'an ISO 8601 time',
  },
  idempotencyKey: { test: (value: unknown): boolean => typeof value === 'string', expected: 'a string' },
} satisfies Record<string, Check>;
export const ADMISSION_REQUEST = {
  uid: { test: (value: unknown): boolean => typeof value === 'string', expected: 'a string' },
  operation: {
    test: (value: unknown): boolean =>
      value === 'CREATE' || value === 'UPDATE' || value === 'DELETE' || value === 'CONNECT',
    expected: 'one of CREATE, UPDATE, DELETE, CONNECT',
  },
  dryRun: { test: (value: unknown): boolean => typeof value === 'boolean', expected: 'true or false' },
} satisfies Record<string, Check>;

function test0(value: unknown): boolean {
  if (!isObject(value)) return false;
  const field0 = value.present;
  if (field0 === undefined || !(field0 === true)) return false;
  return true;
}
function test1(value: unknown): boolean {
  if (!isObject(value)) return false;
  const field0 = value.absent;
  if (field0 === undefined || !(field0 === true)) return false;
  return true;
}
function test2(value: unknown): boolean {
  if (!isObject(value)) return false;
  const field0 = value.level;
  if (
    field0 === undefined ||
    !(field0 === 'debug' || field0 === 'info' || field0 === 'warning' || field0 === 'error')
  )
    return false;
  const field1 = value.message;
  if (field1 === undefined || !(typeof field1 === 'string')) return false;
  const field2 = value.handler;
  if (field2 !== undefined && !(typeof field2 === 'string')) return false;
  return true;
}
function test3(value: unknown): boolean {
  if (!isObject(value)) return false;
  const field0 = value.type;
  if (field0 === undefined || !(field0 === 'Normal' || field0 === 'Warning')) return false;
  const field1 = value.reason;
  if (field1 === undefined || !(typeof field1 === 'string')) return false;
  const field2 = value.message;
  if (field2 === undefined || !(typeof field2 === 'string')) return false;
  return true;
}
function test4(value: unknown): boolean {
  if (!isObject(value)) return false;
  const field0 = value.apiVersion;
  if (field0 === undefined || !(typeof field0 === 'string' && field0.length >= 1)) return false;
  const field1 = value.kind;
  if (field1 === undefined || !(typeof field1 === 'string' && field1.length >= 1)) return false;
  const field2 = value.name;
  if (field2 === undefined || !(typeof field2 === 'string' && field2.length >= 1)) return false;
  const field3 = value.namespace;
  if (field3 !== undefined && !(typeof field3 === 'string' && field3.length >= 1)) return false;
  const field4 = value.uid;
  if (field4 !== undefined && !(typeof field4 === 'string' && field4.length >= 1)) return false;
  return true;
}
function test5(value: unknown): boolean {
  if (!isObject(value)) return false;
  const field0 = value.apiVersion;
  if (field0 === undefined || !(typeof field0 === 'string')) return false;
  const field1 = value.kind;
  if (field1 === undefined || !(typeof field1 === 'string')) return false;
  const field2 = value.metadata;
  if (
    field2 === undefined ||
    !(isObject(field2) && (typeof field2.name === 'string' || typeof field2.generateName === 'string'))
  )
    return false;
  return true;
}
function test6(value: unknown): boolean {
  if (!Array.isArray(value) || value.length < 1) return false;
  for (const item of value)
    if (!(item === 'CREATE' || item === 'UPDATE' || item === 'DELETE' || item === 'CONNECT')) return false;
  return true;
}
function test7(value: unknown): boolean {
  if (!Array.isArray(value)) return false;
  for (const item of value) if (!(typeof item === 'string' && item.length >= 1)) return false;
  return true;
}
function test8(value: unknown): boolean {
  if (!Array.isArray(value)) return false;
  for (const item of value) if (!(typeof item === 'string')) return false;
  return true;
}
function test9(value: unknown): boolean {
  if (!Array.isArray(value) || value.length < 1) return false;
  for (const item of value) if (!(typeof item === 'string')) return false;
  return true;
}
function test10(value: unknown): boolean {
  if (!isObject(value)) return false;
  for (const key in value) {
    if (!Object.hasOwn(value, key)) continue;
    const item = value[key];
    if (!test11(item)) return false;
  }
  return true;
}
function test11(value: unknown): boolean {
  if (!Array.isArray(value)) return false;
  for (const item of value) if (!test12(item)) return false;
  return true;
}
function test12(value: unknown): boolean {
  if (!Array.isArray(value) || value.length !== 2) return false;
  const item0 = value[0];
  const item1 = value[1];
  return (item0 === null || typeof item0 === 'string') && Array.isArray(item1);
}
function test13(value: unknown): boolean {
  if (!isObject(value)) return false;
  for (const key in value) {
    if (!Object.hasOwn(value, key)) continue;
    const item = value[key];
    if (!(typeof item === 'string')) return false;
  }
  return true;
}
