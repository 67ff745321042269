import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubernetesEvent } from '../protocol/index.ts';
import type { Handler } from './context.ts';
import { postingEvents, referenceTo } from './events.ts';
import { adopt } from './hierarchies.ts';
import { invoke } from './invoke.ts';
import { createRegistry } from './registry.ts';
import { invocation } from './test-helpers.ts';

async function outcomeOf(fn: Handler) {
  const registry = createRegistry();
  registry.on.create('kopfexamples', { id: 'fn' }, fn);
  const { outcomes } = await invoke(invocation(['fn']), registry.handlers);
  return outcomes.fn;
}

describe('events about other objects', () => {
  it('posts about the handled object without `about`, about each object named with it', async () => {
    const outcome = await outcomeOf(({ body, events }) => {
      events.normal('Handled', 'about the object itself');
      const child = adopt({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'kex-1-cm' } }, body);
      events.normal('Configured', 'about the child', { about: child });
      events.warning('Checked', 'about two others', {
        about: [
          { apiVersion: 'v1', kind: 'Namespace', name: 'team-a' },
          {
            apiVersion: 'apps/v1',
            kind: 'Deployment',
            metadata: { name: 'web', namespace: 'team-a', uid: 'uid-web', labels: { a: 'b' } },
          },
        ],
      });
      events.normal('Nobody', 'about no object at all', { about: [] });
    });
    assert.deepEqual(outcome?.events, [
      { type: 'Normal', reason: 'Handled', message: 'about the object itself' },
      {
        type: 'Normal',
        reason: 'Configured',
        message: 'about the child',
        about: { apiVersion: 'v1', kind: 'ConfigMap', name: 'kex-1-cm', namespace: 'default' },
      },
      {
        type: 'Warning',
        reason: 'Checked',
        message: 'about two others',
        about: { apiVersion: 'v1', kind: 'Namespace', name: 'team-a' },
      },
      {
        type: 'Warning',
        reason: 'Checked',
        message: 'about two others',
        about: {
          apiVersion: 'apps/v1',
          kind: 'Deployment',
          name: 'web',
          namespace: 'team-a',
          uid: 'uid-web',
        },
      },
    ]);
  });

  it('can be about the handled object by its body, with its uid', async () => {
    const outcome = await outcomeOf(({ body, events }) => {
      events.normal('Self', 'named', { about: body });
    });
    assert.deepEqual(outcome?.events?.[0]?.about, {
      apiVersion: 'kopf.dev/v1',
      kind: 'KopfExample',
      name: 'kex-1',
      namespace: 'default',
      uid: 'uid-1',
    });
  });

  it('fails the handler on a malformed `about`, posting none of the list, keeping earlier events', async () => {
    const outcome = await outcomeOf(({ events }) => {
      events.normal('Before', 'kept');
      events.normal('Broken', 'never posted', {
        about: [
          { apiVersion: 'v1', kind: 'ConfigMap', name: 'fine' },
          { kind: 'ConfigMap', name: 'x' } as never,
        ],
      });
    });
    assert.equal(outcome?.status, 'temporary', 'a mistake in the handler, retried as any unexpected error');
    assert.match(
      (outcome as { message: string }).message,
      /^events\.normal: "about" takes objects \(or references to them\) with an apiVersion, a kind and a name, got \{"kind":"ConfigMap","name":"x"\}$/,
    );
    assert.deepEqual(outcome?.events, [{ type: 'Normal', reason: 'Before', message: 'kept' }]);
  });

  it('says why a child with only a generateName cannot be named, and refuses what is not an object', () => {
    const events: KubernetesEvent[] = [];
    const post = postingEvents(events);
    assert.throws(
      () =>
        post.warning('r', 'm', {
          about: { apiVersion: 'v1', kind: 'Pod', metadata: { generateName: 'kex-1-' } },
        }),
      /^TypeError: events\.warning: "about" an object with only a generateName: it has no name until it is made; give it one$/,
    );
    for (const about of [null, 'kex-1', 42, { apiVersion: 'v1', kind: 'Pod', name: '' }]) {
      assert.throws(() => post.normal('r', 'm', { about: about as never }), TypeError, String(about));
    }
    assert.throws(
      () => referenceTo({ apiVersion: 'v1', kind: 'Pod', name: 'p', namespace: 7 }, 'here'),
      /^TypeError: here: "about" Pod p has a namespace that is not a non-empty string$/,
    );
    assert.throws(
      () => referenceTo({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', uid: '' } }, 'here'),
      /has a uid that is not a non-empty string/,
    );
    assert.deepEqual(events, []);
  });
});
