import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { addMemberWithKey, call, seedOrg, useTestApp } from '../helpers/app.ts';
import { assertErrorEnvelope } from '../http/envelope.ts';

// /v1/members: inviting, listing and managing the members of the key's organization.

const t = useTestApp({}, { reset: false });

const UNKNOWN_ID = '01900000-0000-7000-8000-000000000000';

async function auditOf(memberId: string) {
  const { rows } = await t.db.query<any>('select * from audit_log where target_id = $1 order by id', [memberId]);
  return rows;
}

describe('GET /v1/members', () => {
  it('happy: pages the organization’s members newest first', async () => {
    const { key, memberId, org } = await seedOrg(t.db);
    const second = await addMemberWithKey(t.db, org.id, 'viewer', undefined, 'second@example.com');
    const page1 = await call(t.app, 'GET', '/v1/members?limit=1', { key });
    assert.equal(page1.status, 200);
    assert.deepEqual(page1.json.data.data.map((m: { id: string }) => m.id), [second.memberId]);
    assert.deepEqual(page1.json.data.meta, { count: 1, has_more: true, next_cursor: second.memberId });
    const page2 = await call(t.app, 'GET', `/v1/members?limit=1&before=${second.memberId}`, { key });
    assert.deepEqual(page2.json.data.data.map((m: { id: string }) => m.id), [memberId]);
    assert.equal(page2.json.data.meta.has_more, false);
    const m = page1.json.data.data[0];
    assert.deepEqual(Object.keys(m).sort(), ['active', 'created_at', 'email', 'id', 'organization_id', 'role', 'updated_at']);
  });

  it('happy: lets a viewer with a full-access key list members', async () => {
    const { org } = await seedOrg(t.db);
    const v = await addMemberWithKey(t.db, org.id, 'viewer');
    assert.equal((await call(t.app, 'GET', '/v1/members', { key: v.key })).status, 200);
  });

  it('error: refuses a bad limit or cursor with 400', async () => {
    const { key } = await seedOrg(t.db);
    assertErrorEnvelope(await call(t.app, 'GET', '/v1/members?limit=1000', { key }), 400, 'bad_request');
    assertErrorEnvelope(await call(t.app, 'GET', '/v1/members?before=abc', { key }), 400, 'bad_request');
  });

  it('security: shows no member of another organization', async () => {
    const a = await seedOrg(t.db);
    const b = await seedOrg(t.db);
    const ids = (await call(t.app, 'GET', '/v1/members?limit=100', { key: a.key })).json.data.data.map((m: { id: string }) => m.id);
    assert.deepEqual(ids, [a.memberId]);
    assert.ok(!ids.includes(b.memberId));
  });
});

describe('GET /v1/members/:id', () => {
  it('happy: answers one member', async () => {
    const { key, memberId } = await seedOrg(t.db);
    const res = await call(t.app, 'GET', `/v1/members/${memberId}`, { key });
    assert.equal(res.status, 200);
    assert.equal(res.json.data.id, memberId);
    assert.equal(res.json.data.password_hash, undefined);
  });

  it('error: answers 404 for an unknown id or one that is not a UUID', async () => {
    const { key } = await seedOrg(t.db);
    assertErrorEnvelope(await call(t.app, 'GET', `/v1/members/${UNKNOWN_ID}`, { key }), 404, 'not_found');
    assertErrorEnvelope(await call(t.app, 'GET', '/v1/members/42', { key }), 404, 'not_found');
  });

  it('security: answers 404, not 403, for another organization’s member', async () => {
    const a = await seedOrg(t.db);
    const b = await seedOrg(t.db);
    const res = await call(t.app, 'GET', `/v1/members/${b.memberId}`, { key: a.key });
    assertErrorEnvelope(res, 404, 'not_found');
    assert.equal(res.json.error.message, `Member ${b.memberId} not found.`, 'the same answer as an id that never existed');
  });
});

describe('POST /v1/members', () => {
  describe('happy', () => {
    it('lets an admin invite a developer (201) and records who did it', async () => {
      const { org } = await seedOrg(t.db);
      const a = await addMemberWithKey(t.db, org.id, 'admin');
      const res = await call(t.app, 'POST', '/v1/members', { key: a.key, body: { email: 'New.Dev@Example.com', role: 'developer' } });
      assert.equal(res.status, 201);
      assert.equal(res.json.data.email, 'New.Dev@Example.com');
      assert.equal(res.json.data.role, 'developer');
      assert.equal(res.json.data.active, true);
      assert.equal(res.json.data.organization_id, org.id);
      const [entry] = await auditOf(res.json.data.id);
      assert.equal(entry.action, 'member.created');
      assert.equal(entry.actor_id, a.memberId);
    });

    it('lets an admin invite another admin and a super_admin invite a super_admin', async () => {
      const { key, org } = await seedOrg(t.db);
      const a = await addMemberWithKey(t.db, org.id, 'admin');
      assert.equal((await call(t.app, 'POST', '/v1/members', { key: a.key, body: { email: 'peer@example.com', role: 'admin' } })).status, 201);
      assert.equal((await call(t.app, 'POST', '/v1/members', { key, body: { email: 'boss@example.com', role: 'super_admin' } })).status, 201);
    });
  });

  describe('error', () => {
    for (const [what, body, message] of [
      ['a missing email', { role: 'viewer' }, /"email" is required/],
      ['a missing role', { email: 'a@example.com' }, /"role" is required/],
      ['an email that is not one', { email: 'not an email', role: 'viewer' }, /"email" must be an email address/],
      ['an unknown role', { email: 'a@example.com', role: 'owner' }, /"role" must be one of/],
      ['a password chosen by the inviter', { email: 'a@example.com', role: 'viewer', password: 'correct horse battery' }, /"password" is not allowed/],
      ['a wrongly typed email', { email: ['a@example.com'], role: 'viewer' }, /"email" must be of type string/],
    ] as const) {
      it(`refuses ${what} with 400`, async () => {
        const { key } = await seedOrg(t.db);
        const res = await call(t.app, 'POST', '/v1/members', { key, body });
        assertErrorEnvelope(res, 400, 'bad_request');
        assert.match(res.json.error.message, message);
      });
    }

    it('refuses an email already in the organization, in any case, with 409 conflict', async () => {
      const { key } = await seedOrg(t.db, { email: 'taken@example.com' });
      assertErrorEnvelope(await call(t.app, 'POST', '/v1/members', { key, body: { email: 'TAKEN@example.com', role: 'viewer' } }), 409, 'conflict');
    });

    it('accepts the same email in another organization', async () => {
      await seedOrg(t.db, { email: 'shared@example.com' });
      const { key } = await seedOrg(t.db);
      assert.equal((await call(t.app, 'POST', '/v1/members', { key, body: { email: 'shared@example.com', role: 'viewer' } })).status, 201);
    });
  });

  describe('security', () => {
    it('refuses an admin inviting a super_admin (403): nobody grants a role above their own', async () => {
      const { org } = await seedOrg(t.db);
      const a = await addMemberWithKey(t.db, org.id, 'admin');
      const res = await call(t.app, 'POST', '/v1/members', { key: a.key, body: { email: 'up@example.com', role: 'super_admin' } });
      assertErrorEnvelope(res, 403, 'forbidden');
      assert.match(res.json.error.message, /admin cannot invite a super_admin/);
    });

    it('refuses developers and viewers (403: members.invite)', async () => {
      const { org } = await seedOrg(t.db);
      for (const role of ['developer', 'viewer'] as const) {
        const m = await addMemberWithKey(t.db, org.id, role);
        assertErrorEnvelope(await call(t.app, 'POST', '/v1/members', { key: m.key, body: { email: `${role}-invites@example.com`, role: 'viewer' } }), 403, 'forbidden');
      }
    });

    it('refuses a developer’s key even when it holds members:invite: scoping only narrows', async () => {
      const { org } = await seedOrg(t.db);
      const d = await addMemberWithKey(t.db, org.id, 'developer', ['members:invite']);
      assertErrorEnvelope(await call(t.app, 'POST', '/v1/members', { key: d.key, body: { email: 'x@example.com', role: 'viewer' } }), 403, 'forbidden');
    });
  });
});

describe('PATCH /v1/members/:id', () => {
  describe('happy', () => {
    it('changes a role and writes it to the audit log with actor, from, to and time', async () => {
      const { org } = await seedOrg(t.db);
      const a = await addMemberWithKey(t.db, org.id, 'admin');
      const d = await addMemberWithKey(t.db, org.id, 'developer');
      const res = await call(t.app, 'PATCH', `/v1/members/${d.memberId}`, { key: a.key, body: { role: 'viewer' } });
      assert.equal(res.status, 200);
      assert.equal(res.json.data.role, 'viewer');
      const entry = (await auditOf(d.memberId)).find((e) => e.action === 'member.role_changed');
      assert.equal(entry.actor_type, 'member');
      assert.equal(entry.actor_id, a.memberId);
      assert.deepEqual(entry.details, { from: 'developer', to: 'viewer' });
      assert.ok(entry.created_at instanceof Date);
    });

    it('deactivates a member, whose keys then answer 401, and reactivates them', async () => {
      const { key, org } = await seedOrg(t.db);
      const d = await addMemberWithKey(t.db, org.id, 'developer');
      assert.equal((await call(t.app, 'PATCH', `/v1/members/${d.memberId}`, { key, body: { active: false } })).json.data.active, false);
      assertErrorEnvelope(await call(t.app, 'GET', '/v1/me', { key: d.key }), 401, 'unauthorized');
      assert.equal((await call(t.app, 'PATCH', `/v1/members/${d.memberId}`, { key, body: { active: true } })).json.data.active, true);
      assert.equal((await call(t.app, 'GET', '/v1/me', { key: d.key })).status, 200);
      assert.deepEqual((await auditOf(d.memberId)).map((e) => e.action).slice(-2), ['member.deactivated', 'member.reactivated']);
    });

    it('lets one of two super_admins step down', async () => {
      const { key, memberId, org } = await seedOrg(t.db);
      await addMemberWithKey(t.db, org.id, 'super_admin');
      assert.equal((await call(t.app, 'PATCH', `/v1/members/${memberId}`, { key, body: { role: 'admin' } })).status, 200);
    });
  });

  describe('error', () => {
    it('refuses an empty body, unknown fields and wrong types with 400', async () => {
      const { key, memberId } = await seedOrg(t.db);
      for (const body of [{}, { rolle: 'admin' }, { active: 'false' }, { role: 'root' }, { active: 0 }]) {
        assertErrorEnvelope(await call(t.app, 'PATCH', `/v1/members/${memberId}`, { key, body }), 400, 'bad_request');
      }
    });

    it('answers 404 for an unknown id or one that is not a UUID', async () => {
      const { key } = await seedOrg(t.db);
      assertErrorEnvelope(await call(t.app, 'PATCH', `/v1/members/${UNKNOWN_ID}`, { key, body: { active: false } }), 404, 'not_found');
      assertErrorEnvelope(await call(t.app, 'PATCH', '/v1/members/me', { key, body: { active: false } }), 404, 'not_found');
    });

    it('refuses to demote or deactivate the last active super_admin (409), even themselves', async () => {
      const { key, memberId, org } = await seedOrg(t.db);
      const inactive = await addMemberWithKey(t.db, org.id, 'super_admin');
      await call(t.app, 'PATCH', `/v1/members/${inactive.memberId}`, { key, body: { active: false } });
      for (const body of [{ role: 'admin' }, { active: false }, { role: 'viewer', active: false }]) {
        const res = await call(t.app, 'PATCH', `/v1/members/${memberId}`, { key, body });
        assertErrorEnvelope(res, 409, 'conflict');
        assert.match(res.json.error.message, /last active super_admin/);
      }
      assert.equal((await call(t.app, 'GET', '/v1/me', { key })).json.data.member.role, 'super_admin');
    });
  });

  describe('security', () => {
    it('refuses an admin promoting anyone to super_admin (403), themselves included', async () => {
      const { org } = await seedOrg(t.db);
      const a = await addMemberWithKey(t.db, org.id, 'admin');
      const d = await addMemberWithKey(t.db, org.id, 'developer');
      for (const id of [d.memberId, a.memberId]) {
        const res = await call(t.app, 'PATCH', `/v1/members/${id}`, { key: a.key, body: { role: 'super_admin' } });
        assertErrorEnvelope(res, 403, 'forbidden');
        assert.match(res.json.error.message, /cannot grant the role super_admin/);
      }
    });

    it('refuses an admin changing a super_admin at all (403)', async () => {
      const { org, memberId: superAdmin } = await seedOrg(t.db);
      await addMemberWithKey(t.db, org.id, 'super_admin');
      const a = await addMemberWithKey(t.db, org.id, 'admin');
      for (const body of [{ role: 'viewer' }, { active: false }]) {
        const res = await call(t.app, 'PATCH', `/v1/members/${superAdmin}`, { key: a.key, body });
        assertErrorEnvelope(res, 403, 'forbidden');
        assert.match(res.json.error.message, /admin cannot change a super_admin/);
      }
    });

    it('refuses developers (403: members.manage)', async () => {
      const { org, memberId } = await seedOrg(t.db);
      const d = await addMemberWithKey(t.db, org.id, 'developer');
      assertErrorEnvelope(await call(t.app, 'PATCH', `/v1/members/${memberId}`, { key: d.key, body: { active: false } }), 403, 'forbidden');
    });

    it('answers 404, not 403, for another organization’s member, and leaves them unchanged', async () => {
      const a = await seedOrg(t.db);
      const b = await seedOrg(t.db, { role: 'developer' });
      assertErrorEnvelope(await call(t.app, 'PATCH', `/v1/members/${b.memberId}`, { key: a.key, body: { active: false } }), 404, 'not_found');
      assert.equal((await call(t.app, 'GET', '/v1/me', { key: b.key })).status, 200);
    });

    it('acts with the caller’s live role: an admin demoted a moment ago can no longer manage', async () => {
      const { key, org } = await seedOrg(t.db);
      const a = await addMemberWithKey(t.db, org.id, 'admin');
      const d = await addMemberWithKey(t.db, org.id, 'developer');
      assert.equal((await call(t.app, 'PATCH', `/v1/members/${d.memberId}`, { key: a.key, body: { role: 'viewer' } })).status, 200);
      assert.equal((await call(t.app, 'PATCH', `/v1/members/${a.memberId}`, { key, body: { role: 'developer' } })).status, 200);
      assertErrorEnvelope(await call(t.app, 'PATCH', `/v1/members/${d.memberId}`, { key: a.key, body: { role: 'developer' } }), 403, 'forbidden');
    });
  });
});
