import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { selectNamespaces } from './namespaces.ts';

describe('namespace selection', () => {
  it('serves exact names as given, without watching namespaces', () => {
    const selection = selectNamespaces(['default', 'team-a']);
    assert.deepEqual(selection.names, ['default', 'team-a']);
    assert.equal(selection.matches('team-b'), false);
  });

  it('matches globs, and excludes negations', () => {
    const selection = selectNamespaces(['team-*', '!team-secret*']);
    assert.equal(selection.names, undefined, 'patterns need the namespaces watched');
    assert.equal(selection.matches('team-a'), true);
    assert.equal(selection.matches('team-secret-1'), false);
    assert.equal(selection.matches('default'), false);
  });

  it('serves everything but the negations when only negations are given', () => {
    const selection = selectNamespaces(['!kube-*']);
    assert.equal(selection.matches('default'), true);
    assert.equal(selection.matches('kube-system'), false);
  });

  it('takes regular-expression characters in names literally', () => {
    assert.equal(selectNamespaces(['a.b*']).matches('axb-1'), false);
    assert.equal(selectNamespaces(['a.b*']).matches('a.b-1'), true);
  });
});
