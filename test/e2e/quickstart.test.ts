/**
 * The README's first command, `npm start`, on a machine without a kubeconfig: it starts its own
 * control plane, applies examples/01-minimal, runs it, shows the result, and cleans up on Ctrl+C.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { cacheRoot } from '../../deploy/control-plane/index.ts';
import { startCli } from '../support/processes.ts';

describe('quickstart (npm start)', () => {
  it('runs the minimal example on a local control plane and shows its result', {
    timeout: 240_000,
  }, async () => {
    const home = mkdtempSync(join(tmpdir(), 'causeway-quickstart-home-'));
    const { KUBECONFIG: _kubeconfig, CAUSEWAY_TEST_KUBECONFIG: _test, ...inherited } = process.env;
    const quickstart = startCli('npm', ['start'], {
      ...inherited,
      HOME: home, // no ~/.kube/config here
      XDG_CACHE_HOME: dirname(cacheRoot()), // reuse the control-plane binaries this run already has
    });
    try {
      const [, kubeconfig] = await quickstart.waitFor(/export KUBECONFIG=(\S+)/, 120_000);
      await quickstart.waitFor(/kopf-example-1 status\.create_fn = \{"message":"hello kopf-example-1"\}/);
      assert.match(quickstart.output(), /No kubeconfig found: starting a local control plane/);
      assert.match(quickstart.output(), /handler succeeded .*handler=create_fn/);
      assert.ok(existsSync(kubeconfig as string));
      // npm itself dies of the Ctrl+C; what counts is that the quickstart behind it stopped cleanly.
      await quickstart.stop('SIGINT');
      assert.match(quickstart.output(), /SIGINT received, stopping/);
      assert.equal(
        existsSync(kubeconfig as string),
        false,
        'the local control plane was stopped and removed',
      );
    } finally {
      await quickstart.stop('SIGKILL');
    }
  });
});
