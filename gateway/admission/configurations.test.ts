import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { webhookOf } from '../../webhooks/configurations.ts';
import type { Way } from '../../webhooks/reach.ts';
import { DEFAULT_IDENTITY } from '../identity.ts';
import type { KubeClient } from '../kube/client.ts';
import { ApiError } from '../kube/errors.ts';
import { createLogger } from '../logging.ts';
import { ALONE, type Role } from '../manager/role.ts';
import { Configurations, MAX_CONFIGURATION_BYTES } from './configurations.ts';
import { OWN } from './reviews.ts';

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
  body?: { webhooks: Array<{ name: string; clientConfig: Record<string, unknown> }> };
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
    await configurations(client).made.write([validating], url(true), 'PEM', OWN);
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

  it("leaves out a service's webhooks the apiserver refuses, found alone with dryRun=All, and writes the others'", async () => {
    const sent: Sent[] = [];
    const webhookOfService = (service: string, id: string, kind: 'validate' | 'mutate') =>
      webhookOf(
        service,
        { id, kind, resource: { name: 'widgets', group: 'example.com', version: 'v1' } },
        { group: 'example.com', version: 'v1', plural: 'widgets', namespaced: true },
        PREFIX,
      );
    const good = webhookOfService('good', 'check', 'validate');
    const bad = webhookOfService('bad', 'check', 'validate');
    const badMutating = webhookOfService('bad', 'fix', 'mutate');
    const own = webhookOfService(OWN, 'finalizer', 'mutate');
    // The apiserver refuses any configuration holding a webhook of "bad" (a policy of the cluster's, say).
    const client = {
      request: async (path: string, init: { method: string }) => {
        sent.push({ method: init.method, path });
        return {};
      },
      patch: async (path: string, _type: string, body: Sent['body'], query: unknown) => {
        sent.push({ method: 'PATCH', path, body, query });
        const names = (body?.webhooks ?? []).map((webhook) => webhook.name);
        if (names.some((name) => name.includes('.bad.'))) {
          throw new ApiError('PATCH', path, 422, {
            kind: 'Status',
            reason: 'Invalid',
            message: 'no, not bad',
          });
        }
        return {};
      },
    } as unknown as KubeClient;
    const { made, lines } = configurations(client);
    const refused = await made.write([good, bad, badMutating, own], url(true), 'PEM', OWN);
    assert.deepEqual(
      [...refused],
      [
        [
          'bad',
          `the apiserver refuses its validating webhooks: PATCH ${VALIDATING} failed: 422 Invalid: no, not bad`,
        ],
      ],
    );
    const written = (method: string, path: string) =>
      sent.filter(
        (one) => one.method === method && one.path === path && !(one.query as { dryRun?: string }).dryRun,
      );
    // What the apiserver holds at last: the good service's and the gateway's own, both kinds, none of bad's.
    const names = (one: Sent | undefined) => one?.body?.webhooks.map((webhook) => webhook.name);
    assert.deepEqual(names(written('PATCH', VALIDATING).at(-1)), [good.name]);
    assert.deepEqual(names(written('PATCH', MUTATING).at(-1)), [own.name]);
    // Each service was looked at alone, only checked.
    const checked = sent.filter((one) => (one.query as { dryRun?: string } | undefined)?.dryRun === 'All');
    assert.deepEqual(checked.map(names), [[good.name], [bad.name]]);
    assert.match(
      lines.join(''),
      /the admission webhooks of function service "bad" are not configured: the apiserver refuses its validating webhooks/,
    );
  });

  it('leaves out the webhooks of the service that takes most of a configuration too large to store, before any write', async () => {
    const { client, sent } = recording();
    const { made, lines } = configurations(client);
    const webhooksOf = (service: string, count: number) =>
      Array.from({ length: count }, (_, index) =>
        webhookOf(
          service,
          {
            id: `check${index}`,
            kind: 'validate',
            resource: { name: 'widgets', group: 'example.com', version: 'v1' },
          },
          { group: 'example.com', version: 'v1', plural: 'widgets', namespaced: true },
          PREFIX,
        ),
      );
    // Each webhook carries the bundle: 2 kB of PEM, 2.7 kB in base64.
    const pem = 'P'.repeat(2000);
    const many = webhooksOf('many', 500);
    const few = webhooksOf('few', 3);
    const refused = await made.write([...few, ...many], url(true), pem, OWN);
    assert.deepEqual([...refused.keys()], ['many']);
    assert.match(
      refused.get('many') ?? '',
      /^its validating webhooks take \d+ bytes of the configuration every service shares, which would be \d+ bytes, more than the 1048576 the gateway writes/,
    );
    // One write, of the few: the many never sent.
    assert.deepEqual(
      sent.map(({ method, path }) => [method, path]),
      [
        ['PATCH', VALIDATING],
        ['DELETE', MUTATING],
      ],
    );
    assert.deepEqual(
      sent[0]?.body?.webhooks.map((webhook) => webhook.name),
      few.map((webhook) => webhook.name),
    );
    assert.ok(Buffer.byteLength(JSON.stringify(sent[0]?.body)) <= MAX_CONFIGURATION_BYTES);
    assert.match(
      lines.join(''),
      /the admission webhooks of function service "many" are not configured: its validating webhooks take/,
    );
  });

  it("throws a refusal that is no service's: of the gateway's own webhooks, or of its rights", async () => {
    const client = {
      request: async () => ({}),
      patch: async (path: string) => {
        throw new ApiError('PATCH', path, 403, { kind: 'Status', reason: 'Forbidden', message: 'not yours' });
      },
    } as unknown as KubeClient;
    await assert.rejects(
      configurations(client).made.write([validating], url(true), 'PEM', OWN),
      (error) => error instanceof ApiError && error.status === 403,
    );
  });

  it('names no bundle where the way does not carry one (a tunnel)', async () => {
    const { client, sent } = recording();
    await configurations(client).made.write([validating], url(false), 'PEM', OWN);
    assert.deepEqual(sent[0]?.body?.webhooks[0]?.clientConfig, {
      url: `https://127.0.0.1:8443${validating.path}`,
    });
  });

  it('takes a configuration already gone as deleted, and throws what else fails', async () => {
    await configurations(recording(404).client).made.write([], url(true), 'PEM', OWN);
    await assert.rejects(
      configurations(recording(403).client).made.write([], url(true), 'PEM', OWN),
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
