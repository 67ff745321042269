import assert from 'node:assert/strict';
import { resolve } from 'node:path';
import { describe, it } from 'node:test';
import { refuses } from '../../../../test/support/cli-options.ts';
import { buildOptions } from './options.ts';

describe('buildOptions: what causeway build makes', () => {
  it('names the Worker after the module, writes into dist/<target> by default, and takes an https keys URL', () => {
    assert.deepEqual(
      buildOptions('src/My_Operator.ts', { target: 'workers', 'jwks-url': 'https://k.example/jwks.json' }),
      {
        target: 'workers',
        module: 'src/My_Operator.ts',
        out: resolve('dist/workers'),
        name: 'my-operator',
        jwksUrl: 'https://k.example/jwks.json',
      },
    );
    assert.deepEqual(buildOptions('op.ts', { target: 'node', out: 'image' }), {
      target: 'node',
      module: 'op.ts',
      out: resolve('image'),
      name: 'op',
    });
  });

  it('refuses an unknown target, a name Workers do not take, a plain-http keys URL, and Workers flags for node', () => {
    refuses(() => buildOptions('op.ts', { target: 'deno' }), '--target expects workers or node, got "deno"');
    refuses(
      () => buildOptions('op.ts', { target: 'workers', 'worker-name': 'My Worker' }),
      '--worker-name expects lowercase letters, digits and dashes (at most 63), got "My Worker"',
    );
    refuses(
      () => buildOptions('op.ts', { target: 'workers', 'jwks-url': 'http://keys.example.com/jwks.json' }),
      '--jwks-url expects an https URL, got "http://keys.example.com/jwks.json"',
    );
    refuses(
      () => buildOptions('op.ts', { target: 'node', 'worker-name': 'x' }),
      '--worker-name and --jwks-url are for --target workers',
    );
  });
});
