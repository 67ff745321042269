/**
 * Given a cause, decides which handlers it concerns (by kind and filters), which of them are due now
 * (by the progress kept on the object), which must be given up (retries or time exhausted), and when
 * to look again. Pure logic, tested without a cluster.
 */
import {
  calledAtStart,
  calledFor,
  type HandlerKind,
  type HandlerSpec,
  type KubernetesObject,
  kindsFor,
} from '../../protocol/index.ts';
import { valueAt } from '../../protocol/json.ts';
import { diff } from '../state/diff.ts';
import { type Progress, type ProgressMap, progressKey } from '../state/storage.ts';
import { changeMatches, objectMatches } from './filters.ts';
import { type Candidate, type Cause, type DueCall, type Named, nameOf } from './model.ts';

export interface Plan<S> {
  /** Every handler this cause concerns: when all are done, the cause is handled. */
  concerned: Candidate<S>[];
  due: DueCall<S>[];
  /** Handlers out of retries or time: they fail now, without a call. */
  givenUp: Array<Candidate<S> & { progress: Progress; message: string }>;
  /** When the earliest delayed handler is due, in ms from now. */
  wakeInMs?: number;
  /**
   * A creation that no handler is called for, but that an update or field handler matches: it is
   * recorded as handled, so those handlers see the later changes as updates (Kopf stores its diff-base
   * for any object its changing handlers match).
   */
  awaitsChanges?: boolean;
}

export function planCause<S extends Named>(
  object: KubernetesObject,
  cause: Cause,
  candidates: readonly Candidate<S>[],
  progress: ProgressMap | undefined,
  now: Date,
): Plan<S> {
  const plan: Plan<S> = { concerned: [], due: [], givenUp: [] };
  if (cause.reason === 'none') return plan;
  const kinds = kindsFor(cause.reason);
  for (const candidate of candidates) {
    const { spec } = candidate;
    // A call that only an option brings (`deleted: true` resume handlers on a deletion) is a resumption:
    // it happens the first time this gateway sees the object.
    // And, as in Kopf, resume handlers join the creation or update of an object from before the start.
    const called =
      kinds.includes(spec.kind) ||
      (cause.firstSight && calledFor(spec, cause.reason)) ||
      (cause.existedAtStart && calledAtStart(spec.kind, cause.reason));
    const before = cause.reason === 'update' ? cause.old : undefined;
    if (!called || !objectMatches(object, spec.filters, before)) continue;
    const scoped = scope(cause, spec);
    if (!scoped) continue;
    plan.concerned.push(candidate);
    const record = progress?.[progressKey(nameOf(candidate.service), spec.id)] ?? {
      started: now.toISOString(),
      retries: 0,
    };
    if (record.success || record.failure) continue;
    const exhausted = exhaustion(spec, record, now);
    if (exhausted) {
      plan.givenUp.push({ ...candidate, progress: record, message: exhausted });
      continue;
    }
    const delayedFor = record.delayedUntil ? Date.parse(record.delayedUntil) - now.getTime() : 0;
    if (delayedFor > 0) {
      plan.wakeInMs = Math.min(plan.wakeInMs ?? Number.POSITIVE_INFINITY, delayedFor);
      continue;
    }
    plan.due.push({ ...candidate, progress: record, ...scoped.values });
  }
  if (cause.reason === 'create') {
    plan.awaitsChanges = candidates.some(
      ({ spec }) => LATER_KINDS.has(spec.kind) && objectMatches(object, spec.filters),
    );
  }
  return plan;
}

/** The kinds an update calls: a creation recorded as handled lets them see the changes after it. */
const LATER_KINDS: ReadonlySet<HandlerKind> = new Set(kindsFor('update'));

/**
 * Whether a create/update concerns a handler, and what old/new/diff it sees: relative to its field
 * when it has one (and only when that field changed), else the whole essence.
 */
function scope(
  cause: Cause,
  spec: HandlerSpec,
): { values: Pick<DueCall<unknown>, 'old' | 'new' | 'diff'> } | undefined {
  // A resume handler is about the object, not about a change.
  if ((cause.reason !== 'create' && cause.reason !== 'update') || spec.kind === 'resume')
    return { values: {} };
  const field = spec.filters?.field;
  if (field === undefined) {
    if (spec.kind === 'field') return undefined;
    return { values: { ...(cause.old ? { old: cause.old } : {}), new: cause.new, diff: cause.diff } };
  }
  const old = cause.reason === 'create' ? undefined : valueAt(cause.old, field);
  const current = valueAt(cause.new, field);
  const changes = diff(old, current);
  if (changes.length === 0 || !changeMatches(old, current, spec.filters)) return undefined;
  return {
    values: {
      ...(old === undefined ? {} : { old }),
      ...(current === undefined ? {} : { new: current }),
      diff: changes,
    },
  };
}

/** Why a handler is given up (its retries or its time ran out), or undefined while it may go on. */
export function exhaustion(
  spec: Pick<HandlerSpec, 'options'>,
  record: Pick<Progress, 'started' | 'retries'>,
  now: Date,
): string | undefined {
  const { retries, timeout } = spec.options ?? {};
  if (retries !== undefined && record.retries >= retries) return `gave up after ${record.retries} retries`;
  if (timeout !== undefined && now.getTime() - Date.parse(record.started) > timeout * 1000) {
    return `gave up after its ${timeout}s timeout`;
  }
  return undefined;
}
