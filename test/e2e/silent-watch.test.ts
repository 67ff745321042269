/**
 * One watch that falls silent while its connection lives (the apiserver's stream stops, the
 * connection stays open, no PING to find it): once the resource's watches have had a bookmark, the
 * gateway drops it when the next bookmark is overdue by 15 s (35 s after its last line for the watches
 * of 20 s here, 75 s for the default's of 5 minutes) and watches again from where it was; the object created
 * meanwhile is handled then. On the real apiserver, through a proxy (test/support/lagging-proxy.ts)
 * that speaks HTTP/1.1 to the gateway, so that the watch has a connection of its own to mute.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { operator } from '../../functions/index.ts';
import { silenceMs } from '../../gateway/kube/watcher.ts';
import { DEFAULT_SETTINGS } from '../../gateway/settings.ts';
import { testCluster, testNamespace } from '../support/cluster.ts';
import { startLaggingProxy } from '../support/lagging-proxy.ts';
import {
  applyFile,
  createKopfExample,
  eventually,
  memoryLogger,
  runOperator,
  TEST_SECRET,
} from '../support/operator.ts';

const CRD = new URL('../../examples/01-minimal/crd.yaml', import.meta.url);

describe('a watch that falls silent on a live connection', () => {
  it('is dropped when its next bookmark is 15 s overdue once bookmarks have come, not later, and the object created meanwhile handled then', async (t) => {
    await applyFile(CRD);
    const namespace = await testNamespace(t);
    const proxy = await startLaggingProxy(await testCluster());
    t.after(() => proxy.close());

    const handled: string[] = [];
    const op = operator({ name: 'silent-watch', secret: TEST_SECRET });
    op.on.create('kopfexamples', async function create_fn({ name }) {
      handled.push(name);
      return { created: true };
    });
    // The apiserver sends a watch a bookmark 2 s before its deadline (and then once a minute): a
    // watch of 20 s has one at 18 s, not a minute in. Without bookmarks, a watch of 20 s would be
    // given 80 s (its length and a minute); with them, 35 s: the bound this test measures.
    const watchSeconds = 20;
    const watching = { ...DEFAULT_SETTINGS.watching, watchSeconds };
    const boundMs = silenceMs(watching, true);
    /** For the watch to open again, and the object to be called and patched: under the 5 s between the two. */
    const handlingMs = 4_000;
    assert.ok(boundMs + handlingMs < silenceMs(watching, false));
    const bookmark = proxy.nextBookmark('/kopfexamples');
    const logger = memoryLogger();
    const running = await runOperator(op, {
      namespaces: [namespace],
      kubeconfig: proxy.kubeConfig(),
      logger,
      transport: 'in-process',
      settings: { watching },
    });
    t.after(() => running.stop());
    // The apiserver's watch cache sends a watch no bookmark older than where it started, so none until
    // the resource has changed since (without this change, the test took 122 and 128 s, against
    // 107): one, in a namespace the gateway does not watch.
    await createKopfExample(await testNamespace(t), 'seen-by-the-watch-cache', {});
    await bookmark;
    const mutedAt = performance.now();
    proxy.muteWatches('/kopfexamples');

    await createKopfExample(namespace, 'created-while-silent', {});
    await eventually(
      'the object created while the watch was silent handled',
      async () => (handled.includes('created-while-silent') ? true : undefined),
      boundMs + handlingMs,
    );
    const afterMs = performance.now() - mutedAt;
    assert.ok(
      afterMs >= boundMs - 1000 && afterMs <= boundMs + handlingMs,
      `handled ${afterMs} ms after the watch fell silent: not before the bound, and within it`,
    );
    const silent = logger.lines.filter((line) => /watch silent, dropped it/.test(line));
    assert.equal(silent.length, 1, silent.join('\n'));
    assert.match(silent[0] as string, new RegExp(`silentSeconds=${boundMs / 1000}\\b`));
    assert.deepEqual(handled, ['created-while-silent'], 'called once');
    t.diagnostic(`handled ${(afterMs / 1000).toFixed(1)} s after the watch fell silent: ${silent[0]}`);
  });
});
