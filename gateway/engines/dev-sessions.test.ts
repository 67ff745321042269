/** The Lease of a dev session: what `causeway dev` writes is what the gateway reads, and a bad one says why. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubernetesObject } from '../../protocol/index.ts';
import { type DevSession, devSessionLease, devSessionLeaseName, devSessionOf } from './dev-sessions.ts';

const session: DevSession = {
  service: 'Billing_Operator',
  url: 'https://abc.ngrok.app',
  revision: '1732370000000',
  holder: 'ada@laptop',
  durationSeconds: 15,
};

function lease(): KubernetesObject {
  const written = devSessionLease(session, 'causeway.dev', new Date('2026-11-23T10:00:00.123Z'));
  return { ...written, metadata: { ...(written.metadata as object), uid: 'u' } } as KubernetesObject;
}

describe('dev session Leases', () => {
  it('are read back as the session written, under a name valid for any service name', () => {
    const written = lease();
    assert.equal(written.metadata.name, 'causeway-dev-billing-operator');
    assert.deepEqual(written.metadata.labels, { 'causeway.dev/dev-session': 'true' });
    assert.equal((written.spec as { renewTime: string }).renewTime, '2026-11-23T10:00:00.123000Z');
    assert.deepEqual(devSessionOf(written, 'causeway.dev'), session);
    assert.equal(devSessionLeaseName('x'.repeat(80)).length, 63);
  });

  it('say what is wrong with one that is no session', () => {
    const broken = (change: (object: KubernetesObject) => void) => {
      const object = structuredClone(lease());
      change(object);
      return devSessionOf(object, 'causeway.dev');
    };
    assert.equal(
      broken((object) => delete object.metadata.annotations?.['causeway.dev/service']),
      'no annotation causeway.dev/service',
    );
    assert.equal(
      broken((object) =>
        Object.assign(object.metadata.annotations ?? {}, { 'causeway.dev/url': 'file:///etc' }),
      ),
      'annotation causeway.dev/url is not an http(s) URL',
    );
    assert.equal(
      broken((object) => delete (object.spec as Record<string, unknown>).leaseDurationSeconds),
      'no spec.leaseDurationSeconds',
    );
    assert.equal(devSessionOf(lease(), 'other.prefix'), 'no annotation other.prefix/service');
  });
});
