import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MINIMUM_NODE, nodeVersionProblem } from './node-version.ts';

describe('nodeVersionProblem', () => {
  it('accepts the minimum and anything later', () => {
    for (const version of [MINIMUM_NODE, '22.19.1', '22.20.0', '23.0.0', '24.21.0', '26.1.0']) {
      assert.equal(nodeVersionProblem(version), undefined, version);
    }
  });

  it('names what it needs and what it found, in one line', () => {
    for (const version of ['20.20.2', '22.18.0', '22.9.9', '18.0.0', '0.12.18']) {
      const problem = nodeVersionProblem(version);
      assert.equal(
        problem,
        `needs Node.js ${MINIMUM_NODE} or later, and this is ${version}: install a newer Node (https://nodejs.org)`,
      );
    }
  });
});
