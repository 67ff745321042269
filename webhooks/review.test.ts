import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { isObject } from '../protocol/json.ts';
import { admissionReview, jsonTree, setAtPath, wrongValue } from '../test/support/arbitraries.ts';
import { jsonPatchOf } from './patch.ts';
import { MalformedReview, parseReview, type ReviewRequest, reviewResponse } from './review.ts';

/** A review as the server reads it off the wire. */
const received = (review: unknown): unknown => JSON.parse(JSON.stringify(review));

/** The parts of a review a mutation may break, as the errors name them. */
const REVIEW_PARTS = [
  ['apiVersion'],
  ['kind'],
  ['request'],
  ['request', 'uid'],
  ['request', 'operation'],
  ['request', 'kind'],
  ['request', 'kind', 'kind'],
  ['request', 'resource'],
  ['request', 'resource', 'resource'],
  ['request', 'resource', 'group'],
  ['request', 'userInfo'],
  ['request', 'userInfo', 'username'],
  ['request', 'userInfo', 'groups'],
  ['request', 'object'],
  ['request', 'object', 'metadata'],
  ['request', 'oldObject'],
  ['request', 'oldObject', 'metadata'],
  ['request', 'dryRun'],
  ['request', 'name'],
  ['request', 'namespace'],
  ['request', 'subResource'],
] as const;

/** What parseReview promises of a request it takes: each field of the type ReviewRequest says. */
function assertWellTyped(request: ReviewRequest): void {
  const text = (value: unknown) => typeof value === 'string';
  const optionalText = (value: unknown) => value === undefined || text(value);
  assert.ok(text(request.uid) && request.uid !== '', 'uid');
  assert.ok(['CREATE', 'UPDATE', 'DELETE', 'CONNECT'].includes(request.operation), 'operation');
  assert.ok(
    ['group', 'version', 'kind'].every((field) => text((request.kind as Record<string, unknown>)[field])),
    'kind',
  );
  assert.ok(
    ['group', 'version', 'resource'].every((field) =>
      text((request.resource as Record<string, unknown>)[field]),
    ),
    'resource',
  );
  assert.ok(
    [request.name, request.namespace, request.subResource].every(optionalText),
    'name, namespace, subResource',
  );
  assert.ok(isObject(request.userInfo), 'userInfo');
  assert.ok(optionalText(request.userInfo.username), 'userInfo.username');
  assert.ok(
    request.userInfo.groups === undefined ||
      (Array.isArray(request.userInfo.groups) && request.userInfo.groups.every(text)),
    'userInfo.groups',
  );
  for (const object of [request.object, request.oldObject]) {
    assert.ok(object === undefined || (isObject(object) && isObject(object.metadata)), 'object');
  }
  assert.ok(request.object || request.oldObject, 'an object');
  assert.equal(typeof request.dryRun, 'boolean');
}

// Found by the properties below: a review whose request.kind had no kind was taken (the handler got
// no kind), and a DELETE's `"object": null` came out as an object of null rather than none.
describe('parsing a review', () => {
  const request = {
    uid: 'u',
    operation: 'DELETE',
    kind: { group: 'kopf.dev', version: 'v1', kind: 'KopfExample' },
    resource: { group: 'kopf.dev', version: 'v1', resource: 'kopfexamples' },
    userInfo: { username: 'alice' },
    object: null,
    oldObject: { metadata: { name: 'a' } },
  };
  const review = (changed: Record<string, unknown>) => ({
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: { ...request, ...changed },
  });

  it('refuses a kind or a resource without all its names, saying which', () => {
    assert.throws(
      () => parseReview(review({ kind: { group: 'kopf.dev', version: 'v1' } })),
      new MalformedReview('request.kind must have group, version, kind as strings'),
    );
    assert.throws(
      () => parseReview(review({ namespace: 7 })),
      new MalformedReview('request.namespace must be a string'),
    );
  });

  it('leaves out the object of a DELETE that the apiserver sends as null', () => {
    const parsed = parseReview(review({}));
    assert.equal(Object.hasOwn(parsed, 'object'), false);
    assert.deepEqual(parsed.oldObject, request.oldObject);
  });
});

describe('generated admission reviews (property-based)', () => {
  it('reads a review as sent, and answers it with its uid, the verdict and the patch as a base64 JSONPatch', () => {
    fc.assert(
      fc.property(admissionReview, fc.boolean(), jsonTree, (review, allowed, mergePatch) => {
        const request = parseReview(received(review));
        assertWellTyped(request);
        const sent = received(review) as { request: Record<string, unknown> };
        assert.deepEqual(request, { ...sent.request, dryRun: review.request.dryRun === true });
        const object = request.object ?? request.oldObject;
        const patch = jsonPatchOf(object, [mergePatch]);
        const answer = reviewResponse(
          request.uid,
          allowed ? { allowed, patch } : { allowed, status: { message: 'no', code: 403 } },
        ) as { apiVersion: string; kind: string; response: Record<string, unknown> };
        assert.equal(answer.apiVersion, 'admission.k8s.io/v1');
        assert.equal(answer.kind, 'AdmissionReview');
        assert.equal(answer.response.uid, review.request.uid);
        assert.equal(answer.response.allowed, allowed);
        if (allowed && patch.length > 0) {
          assert.equal(answer.response.patchType, 'JSONPatch');
          const sent = JSON.parse(Buffer.from(answer.response.patch as string, 'base64').toString('utf8'));
          assert.deepEqual(sent, JSON.parse(JSON.stringify(patch)));
        } else {
          assert.equal(answer.response.patch, undefined);
        }
      }),
      { numRuns: 1000 },
    );
  });

  it('refuses a broken review saying which part is wrong, or takes it with every field of its type', () => {
    fc.assert(
      fc.property(
        admissionReview,
        fc.constantFrom(...REVIEW_PARTS),
        fc.oneof(wrongValue, fc.constant(undefined)),
        (review, part, value) => {
          const copy = received(review) as Record<string, unknown>;
          setAtPath(copy, part, value);
          let request: ReviewRequest;
          try {
            request = parseReview(copy);
          } catch (error) {
            assert.ok(error instanceof MalformedReview, `a MalformedReview, not ${error}`);
            const named = part[0] === 'request' ? part.slice(0, 2).join('.') : 'AdmissionReview';
            assert.ok(
              error.message.includes(named) ||
                (part.length === 1 && error.message.includes('request')) ||
                /neither object nor oldObject/.test(error.message),
              `${error.message} names ${named}`,
            );
            return;
          }
          assertWellTyped(request);
        },
      ),
      { numRuns: 1000 },
    );
  });
});
