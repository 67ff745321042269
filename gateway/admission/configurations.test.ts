import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { webhookOf } from '../../webhooks/configurations.ts';
import type { Way } from '../../webhooks/reach.ts';
import { DEFAULT_IDENTITY } from '../identity.ts';
import type { KubeClient } from '../kube/client.ts';
import { ApiError } from '../kube/errors.ts';
import { createLogger } from '../logging.ts';
import { ALONE, type Role } from '../manager/role.ts';
import { Configurations } from './configurations.ts';

const PREFIX = DEFAULT_IDENTITY.annotationPrefix;
const VALIDATING = `/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/${PREFIX}`;
const MUTATING = `/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/${PREFIX}`;

const validating = webhookOf(
  'widgets',
  { id: 'check', kind: 'validate', resource: { name: 'widgets', group: 'example.com', version: 'v1' } },
  { group: 'example.com', version: 'v1', plural: 'widgets', namespaced: true },
  PREFIX,
);

interface Sent {
  method: string;
  path: string;
  body?: { webhooks: Array<{ clientConfig: Record<string, unknown> }> };
  query?: unknown;
}

/** A client that records what is sent; a DELETE answers `deleted` (404: nothing to delete). */
function recording(deleted = 200) {
  const sent: Sent[] = [];
  const client = {
    request: async (path: string, init: { method: string }) => {
      sent.push({ method: init.method, path });
      if (deleted !== 200) throw new ApiError(init.method, path, deleted, '');
      return {};
    },
    patch: async (path: string, _type: string, body: Sent['body'], query: unknown) => {
      sent.push({ method: 'PATCH', path, body, query });
      return {};
    },
  } as unknown as KubeClient;
  return { client, sent };
}

function logged() {
  const lines: string[] = [];
  const logger = createLogger({ format: 'text', sink: { write: (line) => lines.push(line) } });
  return { lines, logger };
}

function configurations(client: KubeClient) {
  const { lines, logger } = logged();
  const made = new Configurations({
    client,
    identity: DEFAULT_IDENTITY,
    namespaces: undefined,
    logger,
  });
  return { made, lines };
}

/** A peer's role whose view of the others is `others`. */
const othersRunning = (others: () => Promise<boolean>): Role => ({
  ...ALONE,
  leads: false,
  othersRunning: others,
});

const url = (bundle: boolean): Way => ({
  clientConfig: { url: 'https://127.0.0.1:8443' },
  bundle,
  close: async () => {},
});

describe('Configurations', () => {
  it('applies a configuration with webhooks as the gateway, and deletes the one without', async () => {
    const { client, sent } = recording();
    await configurations(client).made.write([validating], url(true), 'PEM');
    assert.deepEqual(
      sent.map(({ method, path }) => [method, path]),
      [
        ['PATCH', VALIDATING],
        ['DELETE', MUTATING],
      ],
    );
    assert.deepEqual(sent[0]?.query, { fieldManager: DEFAULT_IDENTITY.fieldManager, force: true });
    assert.deepEqual(sent[0]?.body?.webhooks[0]?.clientConfig, {
      url: `https://127.0.0.1:8443${validating.path}`,
      caBundle: Buffer.from('PEM').toString('base64'),
    });
  });

  it('names no bundle where the way does not carry one (a tunnel)', async () => {
    const { client, sent } = recording();
    await configurations(client).made.write([validating], url(false), 'PEM');
    assert.deepEqual(sent[0]?.body?.webhooks[0]?.clientConfig, {
      url: `https://127.0.0.1:8443${validating.path}`,
    });
  });

  it('takes a configuration already gone as deleted, and throws what else fails', async () => {
    await configurations(recording(404).client).made.write([], url(true), 'PEM');
    await assert.rejects(
      configurations(recording(403).client).made.write([], url(true), 'PEM'),
      (error) => error instanceof ApiError && error.status === 403,
    );
  });

  it('is the last to stop alone, or when no other replica runs', async () => {
    assert.equal(await configurations(recording().client).made.lastToStop(ALONE), true);
    assert.equal(
      await configurations(recording().client).made.lastToStop(othersRunning(async () => false)),
      true,
    );
  });

  it('is not the last while other replicas run, nor when that is not known', async () => {
    const running = configurations(recording().client);
    assert.equal(await running.made.lastToStop(othersRunning(async () => true)), false);
    assert.match(running.lines.join(''), /other replicas run: their webhook configurations stay/);
    const unknown = configurations(recording().client);
    const noLease = othersRunning(async () => {
      throw new Error('no lease');
    });
    assert.equal(await unknown.made.lastToStop(noLease), false);
    assert.match(
      unknown.lines.join(''),
      /the webhook configurations stay: whether other replicas run is not known/,
    );
  });
});
