/**
 * The Lease of a dev session: what `causeway dev` writes is what the gateway reads, and a bad one says
 * why; and the routes that follow whichever sessions are held.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubernetesObject } from '../../protocol/index.ts';
import {
  type DevSession,
  DevSessionRoutes,
  devSessionLease,
  devSessionLeaseName,
  devSessionOf,
} from './dev-sessions.ts';

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

describe('dev session routes', () => {
  /** Routes whose redirects are recorded; `next()` resolves with the next one. */
  function recordedRoutes() {
    const redirects: Array<string | undefined> = [];
    let waiting: PromiseWithResolvers<void> | undefined;
    const routes = new DevSessionRoutes(async (service, to) => {
      redirects.push(to ? `${service} → ${to.url} ${to.revision}` : `${service} → home`);
      waiting?.resolve();
      return true;
    });
    const count = async (n: number) => {
      while (redirects.length < n) {
        waiting = Promise.withResolvers();
        await waiting.promise;
      }
      return redirects;
    };
    return { routes, count };
  }
  const at = (url: string, revision: string, durationSeconds: number): DevSession => ({
    ...session,
    url,
    revision,
    durationSeconds,
  });

  it('send the calls to the session that lasts longest, to another when it ends, and home when none is left', async () => {
    const { routes, count } = recordedRoutes();
    routes.hold('Lease a', at('https://a', '1', 60), 't1');
    routes.hold('FunctionService b', at('https://b', '1', 120), 't1');
    routes.hold('Lease a', at('https://a', '1', 60), 't1'); // the same again: no redirect
    routes.release('Lease a');
    routes.release('FunctionService b');
    assert.deepEqual(await count(3), [
      'Billing_Operator → https://a 1',
      'Billing_Operator → https://b 1',
      'Billing_Operator → home',
    ]);
    await routes.stop();
  });

  it('send the calls home when a session is not renewed within its duration, and a new revision reads it anew', async () => {
    const { routes, count } = recordedRoutes();
    routes.hold('Lease a', at('https://a', '1', 0.05), 't1');
    routes.hold('Lease a', at('https://a', '2', 0.05), 't1');
    assert.deepEqual(await count(3), [
      'Billing_Operator → https://a 1',
      'Billing_Operator → https://a 2',
      'Billing_Operator → home',
    ]);
    await routes.stop();
  });
});
