/**
 * The Lease of a dev session: what `causeway dev` writes is what the gateway reads, and a bad one says
 * why; and the routes that follow whichever sessions are held, where their service allows them, for
 * no longer than it allows, with no timer beyond what Node keeps.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubernetesObject } from '../../protocol/index.ts';
import { createLogger } from '../logging.ts';
import { MAX_TIMER_MS } from '../timing.ts';
import {
  type DevSession,
  DevSessionRoutes,
  type DevSessionsAllowed,
  devSessionLease,
  devSessionLeaseName,
  devSessionOf,
  devSessionRefusal,
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
  const anyHttps: DevSessionsAllowed = { urls: ['https://*'], maxSeconds: 3600 };

  /** Routes whose redirects and warnings are recorded; `count(n)` resolves once there are n redirects. */
  function recordedRoutes(allowed: DevSessionsAllowed | undefined) {
    const redirects: Array<string | undefined> = [];
    const warnings: string[] = [];
    let waiting: PromiseWithResolvers<void> | undefined;
    const logger = createLogger({
      level: 'warning',
      sink: { write: (line) => warnings.push(line) },
    });
    const routes = new DevSessionRoutes({
      redirect: async (service, to) => {
        redirects.push(to ? `${service} → ${to.url} ${to.revision}` : `${service} → home`);
        waiting?.resolve();
        return true;
      },
      allowances: { for: () => allowed },
      logger,
    });
    const count = async (n: number) => {
      while (redirects.length < n) {
        waiting = Promise.withResolvers();
        await waiting.promise;
      }
      return redirects;
    };
    return { routes, count, redirects, warnings };
  }
  const at = (url: string, revision: string, durationSeconds: number): DevSession => ({
    ...session,
    url,
    revision,
    durationSeconds,
  });

  it('send the calls to the session that lasts longest, to another when it ends, and home when none is left', async () => {
    const { routes, count } = recordedRoutes(anyHttps);
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
    const { routes, count } = recordedRoutes(anyHttps);
    routes.hold('Lease a', at('https://a', '1', 0.05), 't1');
    routes.hold('Lease a', at('https://a', '2', 0.05), 't1');
    assert.deepEqual(await count(3), [
      'Billing_Operator → https://a 1',
      'Billing_Operator → https://a 2',
      'Billing_Operator → home',
    ]);
    await routes.stop();
  });

  it('ignore a session its service does not allow, or at a URL it does not allow, saying so once, not at each renewal', async (t) => {
    const refused = recordedRoutes(undefined);
    t.after(() => refused.routes.stop());
    refused.routes.hold('Lease ns/a', at('https://a', '1', 60), 't1');
    refused.routes.hold('Lease ns/a', at('https://a', '1', 60), 't2');
    assert.equal(refused.warnings.length, 1);
    assert.match(
      refused.warnings[0] ?? '',
      /the dev session of Lease ns\/a for "Billing_Operator" is ignored: "Billing_Operator" does not allow dev sessions/,
    );

    const { routes, count, warnings } = recordedRoutes({ urls: ['https://*.ngrok.app'], maxSeconds: 60 });
    t.after(() => routes.stop());
    routes.hold('Lease ns/a', at('https://evil.example', '1', 60), 't1');
    routes.hold('Lease ns/a', at('https://evil.example', '1', 60), 't2');
    routes.hold('Lease ns/b', at('https://ada.ngrok.app', '1', 60), 't1');
    assert.deepEqual(await count(1), ['Billing_Operator → https://ada.ngrok.app 1']);
    assert.equal(warnings.length, 1);
    assert.match(
      warnings[0] ?? '',
      /its URL https:\/\/evil\.example matches none that "Billing_Operator" allows \(https:\/\/\*\.ngrok\.app\)/,
    );
    assert.equal(refused.redirects.length, 0, 'no redirect for the service that allows none');
  });

  it('end a session after what its service allows, whatever duration it asks', async (t) => {
    const { routes, count } = recordedRoutes({ urls: ['https://*'], maxSeconds: 0.05 });
    t.after(() => routes.stop());
    routes.hold('Lease a', at('https://a', '1', 2 ** 31), 't1');
    assert.deepEqual(await count(2), ['Billing_Operator → https://a 1', 'Billing_Operator → home']);
  });

  it('never set a timer Node would run after 1 ms: a long session is looked at again within its limit', async (t) => {
    const timeout = t.mock.method(globalThis, 'setTimeout');
    const { routes, count } = recordedRoutes({ urls: ['https://*'], maxSeconds: 10 ** 9 });
    t.after(() => routes.stop());
    routes.hold('Lease a', at('https://a', '1', 10 ** 9), 't1');
    await count(1);
    const delays = timeout.mock.calls.map((call) => Number(call.arguments[1]));
    assert.ok(delays.length > 0 && delays.every((delay) => delay <= MAX_TIMER_MS), `${delays}`);
  });

  it("go on after a redirect failed: it is logged, and the session's next renewal tries again", async () => {
    const redirects: string[] = [];
    const lines: string[] = [];
    let failing = true;
    const routes = new DevSessionRoutes({
      redirect: async (_service, to) => {
        redirects.push(to?.url ?? 'home');
        if (failing) {
          failing = false;
          throw new Error('rebinding failed');
        }
        return true;
      },
      allowances: { for: () => anyHttps },
      logger: createLogger({ level: 'warning', sink: { write: (line) => lines.push(line) } }),
    });
    routes.hold('Lease a', at('https://a', '1', 60), 't1');
    await routes.stop(); // once the failed redirect is done
    assert.match(lines.join(''), /redirecting the calls of "Billing_Operator" failed.*rebinding failed/);
    routes.hold('Lease a', at('https://a', '1', 60), 't2'); // its renewal
    routes.release('Lease a');
    await routes.stop();
    assert.deepEqual(redirects, ['https://a', 'https://a', 'home'], 'the renewal redirected, the end too');
  });

  it('say why a session is refused', () => {
    const allowed = { urls: ['https://*.ngrok.app'], maxSeconds: 60 };
    assert.equal(devSessionRefusal(at('https://x.ngrok.app', '1', 1), allowed), undefined);
    assert.match(devSessionRefusal(at('https://x.ngrok.app?a', '1', 1), allowed) ?? '', /query/);
    assert.match(devSessionRefusal(at('https://u@x.ngrok.app', '1', 1), allowed) ?? '', /userinfo/);
    assert.match(devSessionRefusal(at('https://x.ngrok.app', '1', 1), undefined) ?? '', /does not allow/);
  });
});
