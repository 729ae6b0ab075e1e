import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createApiKey } from '../../src/auth/api-keys.ts';
import { grantProblem } from '../../src/auth/grants.ts';
import { ROLES } from '../../src/auth/permissions.ts';
import { addMemberWithKey, ADMIN_TOKEN, call, seedOrg, useTestApp } from '../helpers/app.ts';
import { assertErrorEnvelope } from '../http/envelope.ts';

// Issue 23, defect 1: every write that can widen access passes one rank rule
// (src/auth/grants.ts). The first test is the probe's escalation, verbatim.

const t = useTestApp({}, { reset: false });

const inFuture = (ms: number) => new Date(Date.now() + ms).toISOString();

/** An organization with a super_admin (full key), an admin (full key) and a narrowed read-only key of the super_admin. */
async function seedRanks() {
  const top = await seedOrg(t.db, { role: 'super_admin' });
  const admin = await addMemberWithKey(t.db, top.org.id, 'admin');
  const narrowed = await createApiKey(t.db, { memberId: top.memberId, name: 'read-only', accessMode: 'custom', scopes: ['endpoints:read'] }, { type: 'system' });
  if (!narrowed.ok) throw new Error('narrowed key');
  return { top, admin, narrowed: { id: narrowed.apiKey.id, key: narrowed.key } };
}

describe('the rank rule (grantProblem)', () => {
  it('lets each role act on keys and members of its own rank and below, never above', () => {
    for (const [i, actor] of ROLES.entries()) {
      for (const [j, subject] of ROLES.entries()) {
        const above = j < i; // ROLES is ordered highest first
        assert.equal(grantProblem(actor, { kind: 'key', ownerRole: subject, verb: 'change' }) !== undefined, above, `${actor} key of ${subject}`);
        assert.equal(grantProblem(actor, { kind: 'member', newRole: subject }) !== undefined, above, `${actor} invites ${subject}`);
        assert.equal(grantProblem(actor, { kind: 'member', currentRole: subject }) !== undefined, above, `${actor} changes ${subject}`);
      }
    }
  });

  it('gives the operator (no role) no rank limit', () => {
    assert.equal(grantProblem(undefined, { kind: 'key', ownerRole: 'super_admin', verb: 'change' }), undefined);
    assert.equal(grantProblem(undefined, { kind: 'member', currentRole: 'super_admin', newRole: 'viewer' }), undefined);
  });
});

describe('PATCH /v1/api-keys/:id: the probe escalation', () => {
  it("refuses an admin widening a super_admin's narrowed key to full access (403), and the key stays narrowed", async () => {
    const { admin, narrowed } = await seedRanks();
    const res = await call(t.app, 'PATCH', `/v1/api-keys/${narrowed.id}`, { key: admin.key, body: { access_mode: 'full' } });
    assert.equal(res.status, 403, JSON.stringify(res.json));
    assertErrorEnvelope(res, 403, 'forbidden');
    assert.match(res.json.error.message, /admin cannot change the keys of a super_admin/);
    // The escalation's second step fails too: the narrowed key cannot invite a super_admin.
    const invite = await call(t.app, 'POST', '/v1/members', { key: narrowed.key, body: { email: 'new-top@example.com', role: 'super_admin' } });
    assert.equal(invite.status, 403);
    const me = await call(t.app, 'GET', '/v1/me', { key: narrowed.key });
    assert.equal(me.json.data.api_key.access_mode, 'custom');
    assert.deepEqual(me.json.data.api_key.scopes, ['endpoints:read']);
  });

  it("refuses an admin changing a super_admin's key's scopes, or extending or clearing its expiry (403), and writes no audit entry", async () => {
    const { top, admin, narrowed } = await seedRanks();
    for (const body of [
      { access_mode: 'custom', scopes: ['endpoints:read', 'members:invite'] },
      { expires_at: inFuture(365 * 86_400_000) },
      { expires_at: null },
    ]) {
      const res = await call(t.app, 'PATCH', `/v1/api-keys/${narrowed.id}`, { key: admin.key, body });
      assert.equal(res.status, 403, JSON.stringify(body));
      assertErrorEnvelope(res, 403, 'forbidden');
    }
    const audit = await call(t.app, 'GET', '/v1/audit-log?limit=100', { key: top.key });
    assert.ok(!audit.json.data.data.some((e: { action: string }) => e.action === 'api_key.access_changed' || e.action === 'api_key.expiry_changed'));
  });

  it("lets a super_admin change their own key, and an admin change an admin's or a developer's key", async () => {
    const { top, admin, narrowed } = await seedRanks();
    const own = await call(t.app, 'PATCH', `/v1/api-keys/${narrowed.id}`, { key: top.key, body: { access_mode: 'full' } });
    assert.equal(own.status, 200, JSON.stringify(own.json));
    assert.equal(own.json.data.access_mode, 'full');
    const dev = await addMemberWithKey(t.db, top.org.id, 'developer', ['endpoints:read']);
    const widened = await call(t.app, 'PATCH', `/v1/api-keys/${dev.keyId}`, { key: admin.key, body: { access_mode: 'full' } });
    assert.equal(widened.status, 200);
    // The developer's key is full now, but still acts as a developer: rank never rises with access.
    const me = await call(t.app, 'GET', '/v1/me', { key: dev.key });
    assert.equal(me.json.data.api_key.effective_role, 'developer');
    const peer = await addMemberWithKey(t.db, top.org.id, 'admin');
    assert.equal((await call(t.app, 'PATCH', `/v1/api-keys/${peer.keyId}`, { key: admin.key, body: { access_mode: 'custom', scopes: ['usage:read'] } })).status, 200);
  });

  it('changes an expiry (and audits it), refuses one in the past or malformed (400), and refuses an empty edit (400)', async () => {
    const { top, narrowed } = await seedRanks();
    const later = inFuture(86_400_000);
    const res = await call(t.app, 'PATCH', `/v1/api-keys/${narrowed.id}`, { key: top.key, body: { expires_at: later } });
    assert.equal(res.status, 200, JSON.stringify(res.json));
    assert.equal(new Date(res.json.data.expires_at).toISOString(), later);
    assert.equal(res.json.data.access_mode, 'custom', 'an expiry edit leaves the access alone');
    const audit = await call(t.app, 'GET', '/v1/audit-log?limit=5', { key: top.key });
    assert.equal(audit.json.data.data[0].action, 'api_key.expiry_changed');
    for (const body of [{ expires_at: '2001-01-01T00:00:00Z' }, { expires_at: 'tomorrow' }, {}, { scopes: ['usage:read'] }]) {
      const bad = await call(t.app, 'PATCH', `/v1/api-keys/${narrowed.id}`, { key: top.key, body });
      assert.equal(bad.status, 400, JSON.stringify(body));
      assertErrorEnvelope(bad, 400, 'bad_request');
    }
  });
});

describe('the siblings: every other write that can widen access', () => {
  it('refuses an admin creating a key for a super_admin (403)', async () => {
    const { top, admin } = await seedRanks();
    const res = await call(t.app, 'POST', '/v1/api-keys', { key: admin.key, body: { name: 'x', member_id: top.memberId } });
    assert.equal(res.status, 403);
    assert.match(res.json.error.message, /admin cannot create keys for a super_admin/);
  });

  it('refuses an admin inviting or promoting anyone to super_admin, and demoting or deactivating a super_admin (403)', async () => {
    const { top, admin } = await seedRanks();
    const dev = await addMemberWithKey(t.db, top.org.id, 'developer');
    const invite = await call(t.app, 'POST', '/v1/members', { key: admin.key, body: { email: 'x@example.com', role: 'super_admin' } });
    assert.equal(invite.status, 403);
    for (const [id, body] of [
      [dev.memberId, { role: 'super_admin' }],
      [top.memberId, { role: 'viewer' }],
      [top.memberId, { active: false }],
    ] as const) {
      const res = await call(t.app, 'PATCH', `/v1/members/${id}`, { key: admin.key, body });
      assert.equal(res.status, 403, JSON.stringify(body));
      assertErrorEnvelope(res, 403, 'forbidden');
    }
  });

  it("refuses an admin acting through a key a super_admin minted for them to exceed admin: the effective role is what ranks", async () => {
    const { top, admin } = await seedRanks();
    const res = await call(t.app, 'POST', '/v1/api-keys', { key: top.key, body: { name: 'for-admin', member_id: admin.memberId } });
    assert.equal(res.status, 201);
    const widened = await call(t.app, 'PATCH', `/v1/api-keys/${top.keyId}`, { key: res.json.data.key, body: { expires_at: inFuture(1000_000) } });
    assert.equal(widened.status, 403);
  });

  it('lets the operator change any key (no rank), still through the same scope rules', async () => {
    const { top } = await seedRanks();
    const res = await t.app.inject({
      method: 'POST',
      url: `/admin/v1/members/${top.memberId}/api-keys`,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      payload: JSON.stringify({ name: 'op', access_mode: 'custom', scopes: [] }),
    });
    assert.equal(res.statusCode, 400);
  });
});
