import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { renewCertificates } from '../../webhooks/certificates.ts';
import type { KubeClient } from '../kube/client.ts';
import { createLogger } from '../logging.ts';
import { DEFAULT_SETTINGS } from '../settings.ts';
import { ServingCertificates } from './certificates.ts';

/** A serving pair and the CA that signs it. */
async function pair() {
  const { certificates } = await renewCertificates(undefined, ['127.0.0.1']);
  return { key: certificates.key, cert: certificates.cert, bundle: certificates.ca.cert };
}

/** Writes `written` as a user's files (cert-manager's): the CA first, the certificate last. */
async function write(folder: string, written: { key: string; cert: string; bundle: string }) {
  const files = { cert: join(folder, 'tls.crt'), key: join(folder, 'tls.key'), ca: join(folder, 'ca.crt') };
  await writeFile(files.ca, written.bundle);
  await writeFile(files.key, written.key);
  await writeFile(files.cert, written.cert);
  return files;
}

describe('ServingCertificates', () => {
  it("switches to the user's files renewed by another CA: both trusted first, then the certificate, then the new CA alone", {
    timeout: 10_000,
  }, async (t) => {
    const folder = await mkdtemp(join(tmpdir(), 'causeway-admission-'));
    t.after(() => rm(folder, { recursive: true, force: true }));
    const [first, second] = await Promise.all([pair(), pair()]);
    const events: string[] = [];
    let switched: () => void = () => {};
    const done = new Promise<void>((resolve) => {
      switched = resolve;
    });
    const certificates: ServingCertificates = new ServingCertificates(
      {
        client: {} as KubeClient, // asked nothing: the files are the user's
        settings: {
          ...DEFAULT_SETTINGS.admission,
          certificateFiles: await write(folder, first),
          filesCheckIntervalMs: 20,
        },
        logger: createLogger({ sink: { write: () => {} } }),
      },
      {
        trust: async () => {
          const { bundle } = certificates;
          events.push(
            `trust ${bundle === first.bundle + second.bundle ? 'old and new' : bundle === second.bundle ? 'new' : bundle}`,
          );
          if (bundle === second.bundle) switched();
        },
        serve: (_key, cert) => events.push(cert === second.cert ? 'serve new' : 'serve old'),
        serving: () => true,
      },
    );
    t.after(() => certificates.stop());
    const loaded = await certificates.load(['127.0.0.1']);
    assert.equal(loaded.cert, first.cert);
    assert.equal(certificates.bundle, first.bundle);
    certificates.keep();
    await write(folder, second);
    await done;
    assert.deepEqual(events, ['trust old and new', 'serve new', 'trust new']);
    assert.equal(certificates.bundle, second.bundle);
  });

  it('stops renewing at its stop: the renewal under way finishes first, and none is scheduled after it', async (t) => {
    t.mock.timers.enable({ apis: ['setTimeout', 'Date'], now: Date.now() });
    const renewals = t.mock.method(globalThis, 'setTimeout');
    /** The renewals scheduled: the files' looks and the client's timers are shorter than a minute. */
    const scheduled = () =>
      renewals.mock.calls.filter(({ arguments: [, ms] }) => Number(ms) >= 60_000).length;
    let served = 0;
    const certificates = new ServingCertificates(
      {
        client: {} as KubeClient, // asked nothing: the certificates are kept in memory
        settings: DEFAULT_SETTINGS.admission,
        logger: createLogger({ sink: { write: () => {} } }),
      },
      { trust: async () => {}, serve: () => void served++, serving: () => true },
    );
    await certificates.load(['127.0.0.1']);
    certificates.keep();
    assert.equal(scheduled(), 1);
    t.mock.timers.tick(2 * 365 * 24 * 3600 * 1000); // past the certificate's end: its renewal starts
    await certificates.stop();
    assert.equal(served, 1, 'the renewal under way was served before the stop resolved');
    assert.equal(scheduled(), 1, 'no renewal was scheduled after the stop');
  });
});
