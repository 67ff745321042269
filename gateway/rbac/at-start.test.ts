import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createLogger } from '../logging.ts';
import { checkOwnRights, decideOnRights, rightsVerdict } from './at-start.ts';
import type { Permission } from './check.ts';
import type { Checked } from './granted.ts';

const GET_LEASES: Permission = {
  namespace: 'operators',
  group: 'coordination.k8s.io',
  resource: 'leases',
  verb: 'get',
};
const PATCH_STATUS: Permission = {
  namespace: 'operators',
  group: 'kopf.dev',
  resource: 'kopfexamples/status',
  verb: 'patch',
};
const GET_CRD: Permission = {
  group: 'apiextensions.k8s.io',
  resource: 'customresourcedefinitions',
  verb: 'get',
  name: 'kopfexamples.kopf.dev',
};
const wanted = [GET_LEASES, PATCH_STATUS, GET_CRD];
const NO_WAIT = [0, 0, 0];

function memoryLogger() {
  const lines: string[] = [];
  const logger = createLogger({
    level: 'debug',
    format: 'text',
    sink: { write: (line) => lines.push(line) },
  });
  return { lines, logger };
}

/** A cluster whose answers are `answers`, one per check, the last repeated; it counts the checks. */
function cluster(...answers: Array<Partial<Checked>>) {
  let checks = 0;
  return {
    get checks() {
      return checks;
    },
    check: async () => {
      const answer = answers[Math.min(checks++, answers.length - 1)];
      return { missing: [], extra: [], incomplete: [], ...answer };
    },
  };
}

describe('rightsVerdict', () => {
  it('starts when nothing is missing', () => {
    assert.deepEqual(rightsVerdict('refuse', [], 3), { start: true });
    assert.deepEqual(rightsVerdict('warn', [], 3), { start: true });
  });

  it('refuses with each missing permission on a line of its own, and how to grant them', () => {
    const verdict = rightsVerdict('refuse', [GET_LEASES, GET_CRD], 3);
    assert.ok('refusal' in verdict);
    assert.deepEqual(verdict.refusal.split('\n'), [
      'the gateway is not granted 2 of the 3 permissions its flags and services need:',
      '  missing: get leases.coordination.k8s.io in operators',
      '  missing: get customresourcedefinitions.apiextensions.k8s.io "kopfexamples.kopf.dev" cluster-wide',
      '`causeway rbac` with the same flags (`causeway rbac <file>` for `causeway run <file>`), piped to `kubectl apply -f -`, grants them; --rbac-check warn starts anyway',
    ]);
  });

  it('warns, naming each missing permission, with --rbac-check warn', () => {
    const verdict = rightsVerdict('warn', [GET_LEASES], 3);
    assert.deepEqual(verdict, {
      warning:
        'the gateway is not granted 1 of the 3 permissions its flags and services need, starting anyway (--rbac-check warn): get leases.coordination.k8s.io in operators',
    });
  });
});

describe('decideOnRights', () => {
  it('checks again while permissions are missing, and starts once the authorizer grants them', async () => {
    const { lines, logger } = memoryLogger();
    const answers = cluster({ missing: [GET_LEASES] }, { missing: [GET_LEASES] }, {});
    await decideOnRights('refuse', wanted, answers.check, { logger, recheckDelaysMs: NO_WAIT });
    assert.equal(answers.checks, 3);
    const again = lines.filter((line) => line.includes('checking again'));
    assert.equal(again.length, 2, lines.join(''));
    assert.match(
      again[0] as string,
      /1 of 3 permissions it needs are not granted, e\.g\. get leases\.coordination\.k8s\.io in operators: checking again in 0 s/,
    );
  });

  it('refuses once every check found a permission missing', async () => {
    const { logger } = memoryLogger();
    const answers = cluster({ missing: [PATCH_STATUS] });
    await assert.rejects(
      decideOnRights('refuse', wanted, answers.check, { logger, recheckDelaysMs: NO_WAIT }),
      /missing: patch kopfexamples\.kopf\.dev\/status in operators/,
    );
    assert.equal(answers.checks, 1 + NO_WAIT.length);
  });

  it('warns and starts with --rbac-check warn', async () => {
    const { lines, logger } = memoryLogger();
    const answers = cluster({ missing: [PATCH_STATUS] });
    await decideOnRights('warn', wanted, answers.check, { logger, recheckDelaysMs: NO_WAIT });
    const warnings = lines.filter((line) => line.includes('starting anyway'));
    assert.equal(warnings.length, 1, lines.join(''));
    assert.match(warnings[0] as string, /patch kopfexamples\.kopf\.dev\/status in operators/);
  });

  it('takes what is granted beyond the needs for no error: a debug line', async () => {
    const { lines, logger } = memoryLogger();
    const extra = { ...GET_LEASES, verb: 'delete' };
    await decideOnRights('refuse', wanted, cluster({ extra: [extra] }).check, {
      logger,
      recheckDelaysMs: NO_WAIT,
    });
    const line = lines.find((each) => each.includes('granted beyond its needs'));
    assert.match(line ?? lines.join(''), /DEBUG.*delete leases\.coordination\.k8s\.io in operators/i);
  });
});

describe('checkOwnRights', () => {
  it('checks nothing, saying so at debug level, for a gateway with no credentials until it logs in', async () => {
    const { lines, logger } = memoryLogger();
    const flags = {
      request: {
        account: { namespace: 'operators', name: 'causeway-gateway' },
        stateIn: 'auto',
        functionTls: [],
      },
      admission: { configurationName: 'causeway.dev' },
    } as const;
    await checkOwnRights(
      { mode: 'refuse', flags },
      { client: undefined, services: [], signer: undefined, ca: undefined, logger },
    );
    assert.equal(lines.length, 1, lines.join(''));
    assert.match(
      lines[0] as string,
      /DEBUG.*its rights are not checked at start: it has no cluster credentials until it logs in/i,
    );
  });
});
