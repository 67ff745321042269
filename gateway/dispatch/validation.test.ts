import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PROTOCOL } from '../../protocol/index.ts';
import { ProtocolError, parseInvocationResponse } from './validation.ts';

/** The answer for one handler `h` with these events. */
const answer = (events: unknown) => ({
  protocol: PROTOCOL,
  outcomes: { h: { status: 'success', events } },
  logs: [],
});

const parsedEvents = (events: unknown) => parseInvocationResponse(answer(events), ['h']).outcomes.h?.events;

describe('validating events', () => {
  it('keeps the events of an outcome, and the object each is about, leaving out anything else', () => {
    assert.deepEqual(
      parsedEvents([
        { type: 'Normal', reason: 'Made', message: 'about the object', extra: 1 },
        {
          type: 'Warning',
          reason: 'Child',
          message: 'about another',
          about: {
            apiVersion: 'v1',
            kind: 'ConfigMap',
            name: 'c',
            namespace: 'ns',
            uid: 'u',
            fieldPath: 'x',
          },
        },
        {
          type: 'Normal',
          reason: 'Cluster',
          message: 'm',
          about: { apiVersion: 'v1', kind: 'Namespace', name: 'ns' },
        },
      ]),
      [
        { type: 'Normal', reason: 'Made', message: 'about the object' },
        {
          type: 'Warning',
          reason: 'Child',
          message: 'about another',
          about: { apiVersion: 'v1', kind: 'ConfigMap', name: 'c', namespace: 'ns', uid: 'u' },
        },
        {
          type: 'Normal',
          reason: 'Cluster',
          message: 'm',
          about: { apiVersion: 'v1', kind: 'Namespace', name: 'ns' },
        },
      ],
    );
  });

  it('refuses a malformed event, saying which', () => {
    assert.throws(
      () => parsedEvents([{ type: 'Info', reason: 'r', message: 'm' }]),
      new ProtocolError('response.outcomes.h.events[0] needs type Normal or Warning, a reason and a message'),
    );
    assert.throws(() => parsedEvents({}), /response\.outcomes\.h\.events must be an array/);
  });

  it('refuses an `about` that does not reference an object', () => {
    const ok = { apiVersion: 'v1', kind: 'ConfigMap', name: 'c' };
    for (const about of [
      null,
      'c',
      [ok],
      { kind: 'ConfigMap', name: 'c' },
      { ...ok, apiVersion: '' },
      { ...ok, kind: 7 },
      { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' } },
      { ...ok, namespace: '' },
      { ...ok, namespace: null },
      { ...ok, uid: 42 },
    ]) {
      assert.throws(
        () =>
          parsedEvents([
            { type: 'Normal', reason: 'ok', message: 'ok' },
            { type: 'Normal', reason: 'r', message: 'm', about },
          ]),
        (error: unknown) =>
          error instanceof ProtocolError &&
          error.message ===
            'response.outcomes.h.events[1].about must reference an object: apiVersion, kind and name, and namespace and uid if any, as non-empty strings',
        JSON.stringify(about),
      );
    }
  });
});
