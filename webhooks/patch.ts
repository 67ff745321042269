/**
 * AdmissionReview v1 takes mutations as an RFC 6902 JSONPatch, while handlers write merge patches (as
 * everywhere else in Causeway): the merge patches are applied in order to the object under review and
 * the JSONPatch is the difference, made by fast-json-patch (which escapes `~` and `/` in keys).
 */
import jsonpatch from 'fast-json-patch';
import { mergePatched } from '../protocol/json.ts';
import type { JsonPatchOperation } from './review.ts';

export function jsonPatchOf(
  object: unknown,
  mergePatches: readonly Record<string, unknown>[],
): JsonPatchOperation[] {
  if (mergePatches.length === 0) return [];
  const patched = mergePatches.reduce<unknown>((current, patch) => mergePatched(current, patch), object);
  return jsonpatch.compare(object as object, patched as object) as JsonPatchOperation[];
}
