/**
 * Kopf's filters: handlers for the objects whose labels and annotations have exact values, are
 * PRESENT or ABSENT, or that a `when` callback accepts. The gateway checks labels and annotations
 * itself, so an object none of them match costs no call and no write; a `when` callback runs in the
 * function service, with everything the handler would be given, before the handler.
 */
import { ABSENT, operator, PRESENT } from 'causeway/functions';

const op = operator({ name: 'filtering-handlers', scope: { resources: ['kopfexamples.kopf.dev'] } });

op.on.create('kopfexamples', { labels: { somelabel: 'somevalue' } }, async function label_exact() {
  return { matched: 'somelabel=somevalue' };
});

op.on.create('kopfexamples', { labels: { somelabel: PRESENT } }, async function label_present({ labels }) {
  return { matched: `somelabel=${labels.somelabel}` };
});

// Everything but what is labelled to be ignored.
op.on.create('kopfexamples', { labels: { ignored: ABSENT } }, async function label_absent() {
  return { matched: 'no label "ignored"' };
});

op.on.create(
  'kopfexamples',
  { annotations: { someannotation: 'somevalue' } },
  async function annotation_exact() {
    return { matched: 'someannotation=somevalue' };
  },
);

// Annotated objects that have items: the gateway checks the annotation, the service the callback.
op.on.create(
  'kopfexamples',
  {
    annotations: { someannotation: PRESENT },
    when: ({ spec }) => Array.isArray(spec.items) && spec.items.length > 0,
  },
  async function with_items({ spec }) {
    return { items: spec.items };
  },
);

export default op;
