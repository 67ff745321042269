/**
 * Kubernetes events from handlers (Kopf's kopf.info / kopf.warn): each `events.normal` or
 * `events.warning` becomes an Event about the object, posted by the gateway after the call, whatever
 * the handler's outcome. Messages are cut to the 1024 characters the API accepts.
 */
import { operator } from 'causeway/functions';

const op = operator({ name: 'events', scope: { resources: ['kopfexamples.kopf.dev'] } });

interface Spec {
  duration?: string;
  note?: string;
}

op.on.create<Spec>('kopfexamples', async function create_fn({ name, spec, events }) {
  events.normal('Greeting', `hello ${name}`);
  if (spec.duration === undefined) {
    events.warning('NoDuration', `${name} says nothing of its duration: assuming 1m`);
  }
  try {
    parseDuration(spec.duration ?? '1m');
  } catch (error) {
    events.warning('BadDuration', `${name}: ${(error as Error).message}`);
  }
  // Whatever its length: the gateway cuts what the API would refuse.
  if (spec.note !== undefined) events.normal('Note', spec.note);
});

function parseDuration(text: string): number {
  const match = /^(\d+)([smh])$/.exec(text);
  if (!match) throw new Error(`"${text}" is not a duration such as 30s, 1m or 2h`);
  return Number(match[1]) * { s: 1, m: 60, h: 3600 }[match[2] as 's' | 'm' | 'h'];
}

export default op;
