/** `causeway explain`'s text: the object's cause, state, finalizer and owner, then a row per handler. */
import { escapeControls } from '../logging.ts';
import type { ExplainedHandler, Explanation } from './explanation.ts';

export function explanationText(explanation: Explanation): string {
  // What services and objects chose (ids, messages, names) reaches a terminal as text, never as escape
  // sequences or lines of its own.
  return `${report(explanation).map(escapeControls).join('\n')}\n`;
}

/** The report's lines. */
function report(explanation: Explanation): string[] {
  const { object, state, finalizer, owner } = explanation;
  const where = object.namespace ? `${object.namespace}/${object.name}` : object.name;
  const lines = [
    `${object.resource} ${where}${object.deleting ? ' (being deleted)' : ''}`,
    `  cause:      ${causeText(explanation)}`,
    `  state:      ${state.handled ? 'a handled state is recorded' : 'never handled'}; kept in ${state.in === 'status' ? 'the status' : 'annotations'}`,
    `  finalizer:  ${finalizer.name}: ${finalizer.present ? 'present' : 'absent'}, ${finalizer.needed ? 'needed' : 'not needed'}${finalizerHolders(explanation.handlers)}`,
    ...(owner ? [`  owner:      ${ownerText(owner)}`] : []),
    '',
  ];
  if (explanation.handlers.length === 0) return [...lines, 'No handler is served on this resource.'];
  const rows = explanation.handlers.map((handler) => [
    handler.id,
    handler.kind,
    handler.service,
    handler.status,
    handler.match,
    handler.progress ? String(handler.progress.retries) : '-',
    handler.progress?.nextAttempt ?? '-',
    handler.resultKey ? `${handler.resultKey}${handler.hasResult ? '' : ' (none yet)'}` : '-',
  ]);
  const header = ['HANDLER', 'KIND', 'SERVICE', 'STATUS', 'MATCH', 'RETRIES', 'NEXT ATTEMPT', 'RESULT'];
  const notes = explanation.handlers.flatMap(notesOf);
  return [...lines, ...columns([header, ...rows]), ...(notes.length ? ['', ...notes] : [])];
}

function causeText({ cause, changed }: Explanation): string {
  switch (cause) {
    case 'none':
      return 'none: the last change is handled';
    case 'update':
      return `update (changed: ${changed.join(', ') || 'metadata'})`;
    case 'delete':
      return 'delete: the deletion waits for the delete handlers';
    default:
      return cause;
  }
}

function finalizerHolders(handlers: readonly ExplainedHandler[]): string {
  const holders = handlers.filter((handler) => handler.holdsFinalizer).map((handler) => handler.id);
  return holders.length ? ` (for ${holders.join(', ')})` : '';
}

function ownerText(owner: NonNullable<Explanation['owner']>): string {
  const how = owner.sharding ? 'its shard of the objects' : 'the leader';
  const of = `of ${owner.members.length} replica(s): ${owner.members.join(', ')}`;
  return owner.replica
    ? `${owner.replica} (${how}) ${of}`
    : `none runs now (frozen, or disagreeing on sharding) ${of}`;
}

/** Why a handler is filtered or left to a callback, and its last message. */
function notesOf(handler: ExplainedHandler): string[] {
  const notes = handler.reason ? [`${handler.id}: ${handler.reason}`] : [];
  const message = handler.progress?.message ?? handler.lastEvent?.message;
  if (handler.progress?.message !== undefined) notes.push(`${handler.id}: last message: ${message}`);
  else if (handler.lastEvent)
    notes.push(
      `${handler.id}: last event ${handler.lastEvent.reason} at ${handler.lastEvent.time}: ${message}`,
    );
  return notes;
}

/** Rows padded into columns, two spaces apart. */
function columns(rows: readonly string[][]): string[] {
  const widths = (rows[0] ?? []).map((_, index) => Math.max(...rows.map((row) => (row[index] ?? '').length)));
  return rows.map((row) =>
    row.map((cell, index) => (index === row.length - 1 ? cell : cell.padEnd(widths[index] ?? 0))).join('  '),
  );
}
