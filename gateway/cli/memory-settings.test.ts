import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MEMORY_ENV, MEMORY_NODE_FLAGS, missingMemorySettings } from './memory-settings.ts';

describe('missingMemorySettings', () => {
  it('gives all of them to a process started without any', () => {
    assert.deepEqual(missingMemorySettings([], { PATH: '/usr/bin' }), {
      flags: ['--max-semi-space-size=4', '--heap-growing-percent=50'],
      env: { MALLOC_ARENA_MAX: '2' },
    });
  });

  it("needs nothing more in a process started with what it gave (the image's, or the launcher's own)", () => {
    const missing = missingMemorySettings(['--enable-source-maps'], {});
    assert.ok(missing);
    assert.equal(missingMemorySettings(['--enable-source-maps', ...missing.flags], missing.env), undefined);
    assert.equal(missingMemorySettings([...MEMORY_NODE_FLAGS], { ...MEMORY_ENV }), undefined);
  });

  it('leaves a setting the user chose as it is, in the command line, NODE_OPTIONS or the environment', () => {
    assert.deepEqual(missingMemorySettings(['--max-semi-space-size=16'], { MALLOC_ARENA_MAX: '8' }), {
      flags: ['--heap-growing-percent=50'],
      env: {},
    });
    assert.deepEqual(
      missingMemorySettings([], {
        NODE_OPTIONS: '--import=x.ts  --heap_growing_percent=100 ',
        MALLOC_ARENA_MAX: '4',
      }),
      { flags: ['--max-semi-space-size=4'], env: {} },
    );
    assert.deepEqual(missingMemorySettings(['--max_semi_space_size', '8', '--heap-growing-percent=20'], {}), {
      flags: [],
      env: { MALLOC_ARENA_MAX: '2' },
    });
  });

  it('gives none with CAUSEWAY_MEMORY_SETTINGS=off', () => {
    assert.equal(missingMemorySettings([], { CAUSEWAY_MEMORY_SETTINGS: 'off' }), undefined);
  });
});
