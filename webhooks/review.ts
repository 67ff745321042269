/**
 * AdmissionReview v1, as the apiserver sends it and expects it back: parsed strictly enough that a
 * malformed review gets a 400 with the reason instead of a crash or a wrong answer.
 */
import type { AdmissionOperation, KubernetesObject, UserInfo } from '../protocol/index.ts';
import { isObject } from '../protocol/json.ts';

export const REVIEW_API_VERSION = 'admission.k8s.io/v1';

export interface ReviewRequest {
  uid: string;
  kind: { group: string; version: string; kind: string };
  resource: { group: string; version: string; resource: string };
  subResource?: string;
  name?: string;
  namespace?: string;
  operation: AdmissionOperation;
  userInfo: UserInfo;
  /** The object after the operation: absent for DELETE. */
  object?: KubernetesObject;
  /** The object before it: UPDATE and DELETE. */
  oldObject?: KubernetesObject;
  dryRun: boolean;
}

/** What a webhook decided about a review. */
export interface Verdict {
  allowed: boolean;
  /** Why not: shown to the client. */
  status?: { message: string; code: number };
  warnings?: string[];
  /** RFC 6902 operations on the object under review (mutating webhooks). */
  patch?: JsonPatchOperation[];
}

export interface JsonPatchOperation {
  op: 'add' | 'remove' | 'replace' | 'move' | 'copy' | 'test';
  path: string;
  value?: unknown;
  from?: string;
}

/** A review this server cannot answer: the 400's reason. */
export class MalformedReview extends Error {
  override name = 'MalformedReview';
}

const OPERATIONS: readonly unknown[] = ['CREATE', 'UPDATE', 'DELETE', 'CONNECT'];

export function parseReview(value: unknown): ReviewRequest {
  if (!isObject(value)) throw new MalformedReview('the body is not a JSON object');
  if (value.apiVersion !== REVIEW_API_VERSION || value.kind !== 'AdmissionReview') {
    throw new MalformedReview(
      `expected an AdmissionReview of ${REVIEW_API_VERSION}, got ${JSON.stringify(value.kind)} of ${JSON.stringify(value.apiVersion)}`,
    );
  }
  const request = value.request;
  if (!isObject(request)) throw new MalformedReview('the review has no request');
  if (typeof request.uid !== 'string' || request.uid === '')
    throw new MalformedReview('request.uid is missing');
  if (!OPERATIONS.includes(request.operation)) {
    throw new MalformedReview(`request.operation ${JSON.stringify(request.operation)} is not an operation`);
  }
  const namedParts = {
    kind: ['group', 'version', 'kind'],
    resource: ['group', 'version', 'resource'],
  } as const;
  for (const [part, names] of Object.entries(namedParts)) {
    const value = request[part];
    if (!isObject(value) || !names.every((name) => typeof value[name] === 'string')) {
      throw new MalformedReview(`request.${part} must have ${names.join(', ')} as strings`);
    }
  }
  for (const field of ['name', 'namespace', 'subResource'] as const) {
    if (request[field] !== undefined && typeof request[field] !== 'string') {
      throw new MalformedReview(`request.${field} must be a string`);
    }
  }
  const { userInfo } = request;
  if (
    !isObject(userInfo) ||
    !(userInfo.username === undefined || typeof userInfo.username === 'string') ||
    !(
      userInfo.groups === undefined ||
      (Array.isArray(userInfo.groups) && userInfo.groups.every((group) => typeof group === 'string'))
    )
  ) {
    throw new MalformedReview('request.userInfo must be an object, with a username and groups as strings');
  }
  const object = optionalObject(request.object, 'object');
  const oldObject = optionalObject(request.oldObject, 'oldObject');
  if (!object && !oldObject) throw new MalformedReview('the request has neither object nor oldObject');
  if (request.dryRun !== undefined && typeof request.dryRun !== 'boolean') {
    throw new MalformedReview('request.dryRun must be true or false');
  }
  // The apiserver sends `"object": null` for a DELETE: left out, as the type says.
  const { object: _object, oldObject: _oldObject, ...rest } = request;
  return {
    ...(rest as unknown as ReviewRequest),
    ...(object ? { object } : {}),
    ...(oldObject ? { oldObject } : {}),
    dryRun: request.dryRun === true,
  };
}

function optionalObject(value: unknown, part: string): KubernetesObject | undefined {
  if (value === undefined || value === null) return undefined;
  if (!isObject(value) || !isObject(value.metadata)) {
    throw new MalformedReview(`request.${part} is not an object with metadata`);
  }
  return value as unknown as KubernetesObject;
}

/** The review as the apiserver expects the answer. */
export function reviewResponse(uid: string, verdict: Verdict): Record<string, unknown> {
  const patch =
    verdict.patch && verdict.patch.length > 0
      ? { patchType: 'JSONPatch', patch: Buffer.from(JSON.stringify(verdict.patch)).toString('base64') }
      : {};
  return {
    apiVersion: REVIEW_API_VERSION,
    kind: 'AdmissionReview',
    response: {
      uid,
      allowed: verdict.allowed,
      ...(verdict.status ? { status: verdict.status } : {}),
      ...(verdict.warnings && verdict.warnings.length > 0 ? { warnings: verdict.warnings } : {}),
      ...(verdict.allowed ? patch : {}),
    },
  };
}
