import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { hashKey } from '../../src/auth/key-format.ts';
import { addMemberWithKey, call, seedOrg, useTestApp } from '../helpers/app.ts';
import { assertErrorEnvelope } from '../http/envelope.ts';

// /v1/api-keys: members managing keys with full-access keys.

const t = useTestApp({}, { reset: false });

const inFuture = (ms: number) => new Date(Date.now() + ms).toISOString();

describe('POST /v1/api-keys', () => {
  describe('happy', () => {
    it('mints a full-access key for oneself, shown once with its display prefix', async () => {
      const { key, memberId, org } = await seedOrg(t.db, { role: 'viewer', region: 'eu' });
      const res = await call(t.app, 'POST', '/v1/api-keys', { key, body: { name: 'ci' } });
      assert.equal(res.status, 201);
      const d = res.json.data;
      assert.match(d.key, /^wr_live_eu_[0-9A-Za-z]{38}$/);
      assert.equal(d.display_prefix, d.key.slice(0, 'wr_live_eu_'.length + 4));
      assert.equal(d.access_mode, 'full');
      assert.deepEqual(d.scopes, []);
      assert.equal(d.member_id, memberId);
      assert.equal(d.organization_id, org.id);
      assert.equal(d.created_by, memberId);
      assert.equal((await call(t.app, 'GET', '/v1/me', { key: d.key })).status, 200);
    });

    it('mints a custom key with scopes and an expiry', async () => {
      const { key } = await seedOrg(t.db);
      const expires = inFuture(3_600_000);
      const res = await call(t.app, 'POST', '/v1/api-keys', {
        key,
        body: { name: 'reader', access_mode: 'custom', scopes: ['requests:read', 'requests:replay', 'requests:read'], expires_at: expires },
      });
      assert.equal(res.status, 201, JSON.stringify(res.json));
      assert.deepEqual(res.json.data.scopes, ['requests:read', 'requests:replay']);
      assert.equal(new Date(res.json.data.expires_at).toISOString(), expires);
    });

    it('lets an admin mint a key for another member of the organization', async () => {
      const { org } = await seedOrg(t.db);
      const a = await addMemberWithKey(t.db, org.id, 'admin');
      const d = await addMemberWithKey(t.db, org.id, 'developer');
      const res = await call(t.app, 'POST', '/v1/api-keys', { key: a.key, body: { name: 'for dev', member_id: d.memberId } });
      assert.equal(res.status, 201);
      assert.equal(res.json.data.member_id, d.memberId);
      assert.equal(res.json.data.created_by, a.memberId);
    });
  });

  describe('error', () => {
    for (const [what, body, message] of [
      ['a custom key with zero scopes', { name: 'x', access_mode: 'custom', scopes: [] }, /at least one scope/],
      ['a custom key without scopes at all', { name: 'x', access_mode: 'custom' }, /at least one scope/],
      ['requests:replay without requests:read', { name: 'x', access_mode: 'custom', scopes: ['requests:replay'] }, /requires requests:read/],
      ['an unknown scope', { name: 'x', access_mode: 'custom', scopes: ['endpoints:read', 'everything'] }, /Unknown scope everything/],
      ['scopes on a full-access key', { name: 'x', scopes: ['endpoints:read'] }, /takes no scopes/],
      ['an expiry in the past', { name: 'x', expires_at: '2020-01-01T00:00:00Z' }, /in the future/],
      ['an expiry without a time zone', { name: 'x', expires_at: '2099-01-01T00:00:00' }, /ISO 8601/],
      ['an expiry that is not a date', { name: 'x', expires_at: 'tomorrow' }, /ISO 8601/],
      ['a missing name', {}, /"name" is required/],
      ['an empty name', { name: '' }, /"name" must be at least 1/],
      ['an unknown access mode', { name: 'x', access_mode: 'admin' }, /"access_mode" must be one of/],
      ['a member_id that is not a UUID', { name: 'x', member_id: 'someone' }, /"member_id" has an invalid format/],
    ] as const) {
      it(`refuses ${what} with 400 bad_request`, async () => {
        const { key } = await seedOrg(t.db);
        const res = await call(t.app, 'POST', '/v1/api-keys', { key, body });
        assertErrorEnvelope(res, 400, 'bad_request');
        assert.match(res.json.error.message, message);
      });
    }

    it('answers 404 for a member that does not exist', async () => {
      const { key } = await seedOrg(t.db);
      assertErrorEnvelope(await call(t.app, 'POST', '/v1/api-keys', { key, body: { name: 'x', member_id: '01900000-0000-7000-8000-000000000000' } }), 404, 'not_found');
    });

    it('refuses a key for a deactivated member with 400', async () => {
      const { key, org } = await seedOrg(t.db);
      const d = await addMemberWithKey(t.db, org.id, 'developer');
      await t.db.query('update members set active = false where id = $1', [d.memberId]);
      const res = await call(t.app, 'POST', '/v1/api-keys', { key, body: { name: 'x', member_id: d.memberId } });
      assertErrorEnvelope(res, 400, 'bad_request');
      assert.match(res.json.error.message, /deactivated/);
    });
  });

  describe('security', () => {
    it('stores only a hash: the key is in no table, and the list shows only the display prefix', async () => {
      const { key } = await seedOrg(t.db);
      const minted = (await call(t.app, 'POST', '/v1/api-keys', { key, body: { name: 'secret' } })).json.data;
      const { rows } = await t.db.query<Record<string, unknown>>('select * from api_keys where id = $1', [minted.id]);
      assert.ok(!JSON.stringify(rows[0]).includes(minted.key.slice(-20)));
      assert.deepEqual(Buffer.from(rows[0].key_hash as Uint8Array), hashKey(minted.key));
      const list = await call(t.app, 'GET', '/v1/api-keys', { key });
      const listed = list.json.data.data.find((k: { id: string }) => k.id === minted.id);
      assert.equal(listed.display_prefix, minted.display_prefix);
      assert.equal(listed.key, undefined);
      assert.equal(listed.key_hash, undefined);
      assert.ok(!JSON.stringify(list.json).includes(minted.key));
    });

    it('refuses a developer minting keys for someone else (403)', async () => {
      const { org } = await seedOrg(t.db);
      const d = await addMemberWithKey(t.db, org.id, 'developer');
      const v = await addMemberWithKey(t.db, org.id, 'viewer');
      const res = await call(t.app, 'POST', '/v1/api-keys', { key: d.key, body: { name: 'x', member_id: v.memberId } });
      assertErrorEnvelope(res, 403, 'forbidden');
      assert.match(res.json.error.message, /api_keys\.manage/);
    });

    it('refuses an admin minting a key for a super_admin (403): the key would act above its creator', async () => {
      const { org, memberId: superAdmin } = await seedOrg(t.db);
      const a = await addMemberWithKey(t.db, org.id, 'admin');
      const res = await call(t.app, 'POST', '/v1/api-keys', { key: a.key, body: { name: 'x', member_id: superAdmin } });
      assertErrorEnvelope(res, 403, 'forbidden');
      assert.match(res.json.error.message, /admin cannot create keys for a super_admin/);
    });

    it('answers 404 for a member of another organization', async () => {
      const a = await seedOrg(t.db);
      const b = await seedOrg(t.db);
      assertErrorEnvelope(await call(t.app, 'POST', '/v1/api-keys', { key: a.key, body: { name: 'x', member_id: b.memberId } }), 404, 'not_found');
    });

    it('refuses custom-scope keys, so a narrowed key cannot mint a wider one (403)', async () => {
      const { key } = await seedOrg(t.db, { scopes: ['endpoints:read', 'members:manage', 'members:invite'] });
      assertErrorEnvelope(await call(t.app, 'POST', '/v1/api-keys', { key, body: { name: 'wider' } }), 403, 'forbidden');
    });

    it('writes key creation to the audit log with actor, key name and time', async () => {
      const { key, memberId, org } = await seedOrg(t.db);
      const before = Date.now();
      const minted = (await call(t.app, 'POST', '/v1/api-keys', { key, body: { name: 'audited key' } })).json.data;
      const { rows } = await t.db.query<any>(`select * from audit_log where organization_id = $1 and action = 'api_key.created' and target_id = $2`, [org.id, minted.id]);
      assert.equal(rows.length, 1);
      assert.equal(rows[0].actor_type, 'member');
      assert.equal(rows[0].actor_id, memberId);
      assert.equal(rows[0].target_name, 'audited key');
      assert.ok(new Date(rows[0].created_at).getTime() >= before - 1000);
    });
  });
});

describe('GET /v1/api-keys', () => {
  it('shows a developer only their own keys', async () => {
    const { org, keyId: othersKey } = await seedOrg(t.db);
    const d = await addMemberWithKey(t.db, org.id, 'developer');
    const res = await call(t.app, 'GET', '/v1/api-keys', { key: d.key });
    assert.equal(res.status, 200);
    assert.deepEqual(res.json.data.data.map((k: { id: string }) => k.id), [d.keyId]);
    assert.ok(!res.json.data.data.some((k: { id: string }) => k.id === othersKey));
  });

  it('shows an admin every key of the organization, and none of another', async () => {
    const { org, keyId } = await seedOrg(t.db);
    const a = await addMemberWithKey(t.db, org.id, 'admin');
    const other = await seedOrg(t.db);
    const ids = (await call(t.app, 'GET', '/v1/api-keys', { key: a.key })).json.data.data.map((k: { id: string }) => k.id);
    assert.deepEqual(new Set(ids), new Set([keyId, a.keyId]));
    assert.ok(!ids.includes(other.keyId));
  });
});

describe('PATCH /v1/api-keys/:id', () => {
  it('happy: narrows a key to custom scopes, effective on its next request', async () => {
    const { key, org } = await seedOrg(t.db);
    const d = await addMemberWithKey(t.db, org.id, 'super_admin');
    assert.equal((await call(t.app, 'GET', '/v1/members', { key: d.key })).status, 200);
    const res = await call(t.app, 'PATCH', `/v1/api-keys/${d.keyId}`, { key, body: { access_mode: 'custom', scopes: ['usage:read'] } });
    assert.equal(res.status, 200);
    assert.deepEqual(res.json.data.scopes, ['usage:read']);
    assertErrorEnvelope(await call(t.app, 'GET', '/v1/members', { key: d.key }), 403, 'forbidden');
    const back = await call(t.app, 'PATCH', `/v1/api-keys/${d.keyId}`, { key, body: { access_mode: 'full' } });
    assert.equal(back.status, 200);
    assert.equal((await call(t.app, 'GET', '/v1/members', { key: d.key })).status, 200);
  });

  it('error: refuses bad scope sets with 400 and unknown or revoked keys with 404', async () => {
    const { key, org } = await seedOrg(t.db);
    const d = await addMemberWithKey(t.db, org.id, 'developer');
    assertErrorEnvelope(await call(t.app, 'PATCH', `/v1/api-keys/${d.keyId}`, { key, body: { access_mode: 'custom', scopes: [] } }), 400, 'bad_request');
    assertErrorEnvelope(await call(t.app, 'PATCH', `/v1/api-keys/${d.keyId}`, { key, body: { access_mode: 'custom', scopes: ['requests:replay'] } }), 400, 'bad_request');
    assertErrorEnvelope(await call(t.app, 'PATCH', `/v1/api-keys/${d.keyId}`, { key, body: { scopes: ['usage:read'] } }), 400, 'bad_request');
    assertErrorEnvelope(await call(t.app, 'PATCH', '/v1/api-keys/not-a-uuid', { key, body: { access_mode: 'full' } }), 404, 'not_found');
    await call(t.app, 'DELETE', `/v1/api-keys/${d.keyId}`, { key });
    assertErrorEnvelope(await call(t.app, 'PATCH', `/v1/api-keys/${d.keyId}`, { key, body: { access_mode: 'full' } }), 404, 'not_found');
  });

  it('security: needs api_keys.manage (403 for a developer, even on their own key) and hides other organizations (404)', async () => {
    const { org } = await seedOrg(t.db);
    const d = await addMemberWithKey(t.db, org.id, 'developer');
    assertErrorEnvelope(await call(t.app, 'PATCH', `/v1/api-keys/${d.keyId}`, { key: d.key, body: { access_mode: 'full' } }), 403, 'forbidden');
    const other = await seedOrg(t.db);
    const a = await addMemberWithKey(t.db, org.id, 'admin');
    assertErrorEnvelope(await call(t.app, 'PATCH', `/v1/api-keys/${other.keyId}`, { key: a.key, body: { access_mode: 'custom', scopes: ['usage:read'] } }), 404, 'not_found');
    assert.equal((await call(t.app, 'GET', '/v1/me', { key: other.key })).json.data.api_key.access_mode, 'full');
  });
});

describe('DELETE /v1/api-keys/:id', () => {
  it('happy: revokes one’s own key (204); it answers 401 on the very next request; revoking again is 204', async () => {
    const { key, org } = await seedOrg(t.db);
    const v = await addMemberWithKey(t.db, org.id, 'viewer');
    const second = (await call(t.app, 'POST', '/v1/api-keys', { key: v.key, body: { name: 'rotation' } })).json.data;
    assert.equal((await call(t.app, 'GET', '/v1/me', { key: v.key })).status, 200);
    assert.equal((await call(t.app, 'DELETE', `/v1/api-keys/${v.keyId}`, { key: second.key })).status, 204);
    assertErrorEnvelope(await call(t.app, 'GET', '/v1/me', { key: v.key }), 401, 'unauthorized');
    assert.equal((await call(t.app, 'GET', '/v1/me', { key: second.key })).status, 200, 'the rotated key keeps working');
    assert.equal((await call(t.app, 'DELETE', `/v1/api-keys/${v.keyId}`, { key })).status, 204);
  });

  it('happy: a revoked key stays revoked: it cannot be edited back to life', async () => {
    const { key, org } = await seedOrg(t.db);
    const d = await addMemberWithKey(t.db, org.id, 'developer');
    assert.equal((await call(t.app, 'DELETE', `/v1/api-keys/${d.keyId}`, { key })).status, 204);
    assertErrorEnvelope(await call(t.app, 'PATCH', `/v1/api-keys/${d.keyId}`, { key, body: { access_mode: 'full' } }), 404, 'not_found');
    assertErrorEnvelope(await call(t.app, 'GET', '/v1/me', { key: d.key }), 401, 'unauthorized');
  });

  it('error: answers 404 for unknown ids and ids that are not UUIDs', async () => {
    const { key } = await seedOrg(t.db);
    assertErrorEnvelope(await call(t.app, 'DELETE', '/v1/api-keys/01900000-0000-7000-8000-000000000000', { key }), 404, 'not_found');
    assertErrorEnvelope(await call(t.app, 'DELETE', '/v1/api-keys/123', { key }), 404, 'not_found');
  });

  it('security: a developer cannot revoke a colleague’s key (403), another organization’s key is 404 and keeps working', async () => {
    const { org, keyId } = await seedOrg(t.db);
    const d = await addMemberWithKey(t.db, org.id, 'developer');
    assertErrorEnvelope(await call(t.app, 'DELETE', `/v1/api-keys/${keyId}`, { key: d.key }), 403, 'forbidden');
    const other = await seedOrg(t.db);
    const a = await addMemberWithKey(t.db, org.id, 'admin');
    assertErrorEnvelope(await call(t.app, 'DELETE', `/v1/api-keys/${other.keyId}`, { key: a.key }), 404, 'not_found');
    assert.equal((await call(t.app, 'GET', '/v1/me', { key: other.key })).status, 200);
  });

  it('security: writes one revocation entry to the audit log with actor, key name and time', async () => {
    const { key, memberId, org } = await seedOrg(t.db);
    const victim = await addMemberWithKey(t.db, org.id, 'developer');
    await call(t.app, 'DELETE', `/v1/api-keys/${victim.keyId}`, { key });
    await call(t.app, 'DELETE', `/v1/api-keys/${victim.keyId}`, { key });
    const { rows } = await t.db.query<any>(`select * from audit_log where action = 'api_key.revoked' and target_id = $1`, [victim.keyId]);
    assert.equal(rows.length, 1);
    assert.equal(rows[0].actor_id, memberId);
    assert.equal(rows[0].target_name, 'test');
    assert.ok(rows[0].created_at instanceof Date);
  });
});
