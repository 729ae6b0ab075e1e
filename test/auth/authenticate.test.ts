import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { createApiKey, revokeApiKey, updateApiKeyAccess } from '../../src/auth/api-keys.ts';
import { Authenticator } from '../../src/auth/authenticate.ts';
import { generateKey } from '../../src/auth/key-format.ts';
import type { Db } from '../../src/db/db.ts';
import { openPostgres } from '../../src/db/postgres.ts';
import { updateMember } from '../../src/orgs/members.ts';
import { updateOrganization } from '../../src/orgs/organizations.ts';
import { addMemberWithKey, ADMIN_TOKEN, call, seedOrg, useTestApp } from '../helpers/app.ts';
import { assertErrorEnvelope } from '../http/envelope.ts';

const t = useTestApp({}, { reset: false });

const bearer = (key: string) => `Bearer ${key}`;
const admin = (method: 'PATCH' | 'DELETE' | 'POST', url: string, body?: unknown) => call(t.app, method, url, { body, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });

/**
 * Polls until `fn` holds. The limit only turns a hang into a failure; it is
 * not a speed bound (propagation speed is measured by bench/propagation.ts).
 * It stays below the cache's 30 s TTL, so a cached context that changes
 * within it was dropped by a notification, not by age.
 */
async function pollUntil(fn: () => Promise<boolean>, ms = 20_000): Promise<void> {
  const started = performance.now();
  while (!(await fn())) {
    if (performance.now() - started > ms) throw new Error(`not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('keys that answer 401', () => {
  it('refuses a request without an Authorization header', async () => {
    assertErrorEnvelope(await call(t.app, 'GET', '/v1/me'), 401, 'unauthorized');
  });

  it('refuses a header that is not a Bearer token', async () => {
    const { key } = await seedOrg(t.db);
    for (const header of [`Basic ${Buffer.from(`x:${key}`).toString('base64')}`, key, `Bearer`, `Bearer ${key} extra`, `Token ${key}`]) {
      assertErrorEnvelope(await call(t.app, 'GET', '/v1/me', { headers: { authorization: header } }), 401, 'unauthorized');
    }
  });

  it('refuses garbage, a wrong checksum and a well-formed key that was never issued', async () => {
    const { key } = await seedOrg(t.db);
    const wrongChecksum = key.slice(0, -1) + (key.endsWith('a') ? 'b' : 'a');
    for (const k of ['garbage', 'wr_live_us_x', wrongChecksum, generateKey('us'), "wr_live_us_'; drop table api_keys; --"]) {
      assertErrorEnvelope(await call(t.app, 'GET', '/v1/me', { key: k }), 401, 'unauthorized');
    }
  });

  it('refuses a revoked key from the very next request, though it was cached', async () => {
    const { key, keyId } = await seedOrg(t.db);
    assert.equal((await call(t.app, 'GET', '/v1/me', { key })).status, 200);
    assert.equal((await admin('DELETE', `/admin/v1/api-keys/${keyId}`)).status, 204);
    assertErrorEnvelope(await call(t.app, 'GET', '/v1/me', { key }), 401, 'unauthorized');
  });

  it('refuses an expired key the moment it expires, though it was cached', async () => {
    const { org } = await seedOrg(t.db);
    const member = await addMemberWithKey(t.db, org.id, 'developer');
    const expiresAt = new Date(Date.now() + 20_000);
    const created = await createApiKey(t.db, { memberId: member.memberId, name: 'short-lived', accessMode: 'full', scopes: [], expiresAt }, { type: 'system' });
    assert.ok(created.ok);
    assert.equal((await call(t.app, 'GET', '/v1/me', { key: created.key })).status, 200);
    // The clock is authenticate()'s argument: the test neither waits for the
    // real one nor depends on how fast the machine runs it.
    const counting = countingDb(t.db);
    const auth = new Authenticator(counting.db);
    await auth.start();
    try {
      const header = bearer(created.key);
      assert.ok(await auth.authenticate(header, Date.now()));
      assert.ok(await auth.authenticate(header, expiresAt.getTime() - 1), 'valid until its last millisecond');
      assert.equal(await auth.authenticate(header, expiresAt.getTime()), null);
      assert.equal(counting.lookups(), 1, 'all three were answered from the cache');
    } finally {
      await auth.stop();
    }
  });

  it('refuses the keys of a deactivated member at once, and accepts them again on reactivation', async () => {
    const { key, memberId, org } = await seedOrg(t.db, { role: 'developer' });
    await addMemberWithKey(t.db, org.id, 'super_admin');
    assert.equal((await call(t.app, 'GET', '/v1/me', { key })).status, 200);
    assert.equal((await admin('PATCH', `/admin/v1/members/${memberId}`, { active: false })).status, 200);
    assertErrorEnvelope(await call(t.app, 'GET', '/v1/me', { key }), 401, 'unauthorized');
    assert.equal((await admin('PATCH', `/admin/v1/members/${memberId}`, { active: true })).status, 200);
    assert.equal((await call(t.app, 'GET', '/v1/me', { key })).status, 200);
  });
});

describe('live roles', () => {
  it('refuses what a demoted creator may no longer do at once (403), though the key was cached', async () => {
    const { org } = await seedOrg(t.db);
    const a = await addMemberWithKey(t.db, org.id, 'admin');
    const invite = () => call(t.app, 'POST', '/v1/members', { key: a.key, body: { email: `x${Math.random()}@example.com`, role: 'viewer' } });
    assert.equal((await invite()).status, 201);
    assert.equal((await admin('PATCH', `/admin/v1/members/${a.memberId}`, { role: 'developer' })).status, 200);
    const res = await invite();
    assertErrorEnvelope(res, 403, 'forbidden');
    assert.match(res.json.error.message, /role developer, which lacks the permission members\.invite/);
    const me = await call(t.app, 'GET', '/v1/me', { key: a.key });
    assert.equal(me.json.data.member.role, 'developer');
    assert.ok(!me.json.data.permissions.includes('members.invite'));
  });

  it('gives back what a promoted creator may now do at once', async () => {
    const { org } = await seedOrg(t.db);
    const v = await addMemberWithKey(t.db, org.id, 'viewer');
    assert.equal((await call(t.app, 'GET', '/v1/audit-log', { key: v.key })).status, 403);
    assert.equal((await admin('PATCH', `/admin/v1/members/${v.memberId}`, { role: 'admin' })).status, 200);
    assert.equal((await call(t.app, 'GET', '/v1/audit-log', { key: v.key })).status, 200);
  });

  it('lowers a key one member minted for another to the creator’s live role', async () => {
    const { org } = await seedOrg(t.db);
    const creator = await addMemberWithKey(t.db, org.id, 'admin');
    const owner = await addMemberWithKey(t.db, org.id, 'admin');
    const minted = await call(t.app, 'POST', '/v1/api-keys', { key: creator.key, body: { name: 'for a colleague', member_id: owner.memberId } });
    assert.equal(minted.status, 201, JSON.stringify(minted.json));
    const key = minted.json.data.key;
    assert.equal((await call(t.app, 'GET', '/v1/audit-log', { key })).status, 200);
    // The creator, who saw the key, is demoted: the key can no longer do more than they can.
    assert.equal((await admin('PATCH', `/admin/v1/members/${creator.memberId}`, { role: 'viewer' })).status, 200);
    assertErrorEnvelope(await call(t.app, 'GET', '/v1/audit-log', { key }), 403, 'forbidden');
    const me = await call(t.app, 'GET', '/v1/me', { key });
    assert.equal(me.json.data.member.role, 'admin');
    assert.equal(me.json.data.api_key.effective_role, 'viewer');
    // The owner's own key is untouched.
    assert.equal((await call(t.app, 'GET', '/v1/audit-log', { key: owner.key })).status, 200);
  });

  it('stops a key one member minted for another when the creator is deactivated (401)', async () => {
    const { org } = await seedOrg(t.db);
    const creator = await addMemberWithKey(t.db, org.id, 'admin');
    const owner = await addMemberWithKey(t.db, org.id, 'developer');
    const minted = await call(t.app, 'POST', '/v1/api-keys', { key: creator.key, body: { name: 'for a colleague', member_id: owner.memberId } });
    const key = minted.json.data.key;
    assert.equal((await call(t.app, 'GET', '/v1/me', { key })).status, 200);
    assert.equal((await admin('PATCH', `/admin/v1/members/${creator.memberId}`, { active: false })).status, 200);
    assertErrorEnvelope(await call(t.app, 'GET', '/v1/me', { key }), 401, 'unauthorized');
    assert.equal((await call(t.app, 'GET', '/v1/me', { key: owner.key })).status, 200, 'the owner’s own key still works');
  });

  it('reflects a plan change in the cached context at once', async () => {
    const { key, org } = await seedOrg(t.db, { plan: 'free' });
    assert.equal((await call(t.app, 'GET', '/v1/me', { key })).json.data.organization.plan, 'free');
    assert.equal((await admin('PATCH', `/admin/v1/organizations/${org.id}`, { plan: 'pro' })).status, 200);
    assert.equal((await call(t.app, 'GET', '/v1/me', { key })).json.data.organization.plan, 'pro');
  });
});

describe('the cache and its invalidation', () => {
  const extra: { close(): Promise<void> }[] = [];
  afterEach(async () => {
    for (const x of extra.splice(0)) await x.close();
  });

  /** A second node's authenticator: on PostgreSQL its own pool and LISTEN connection. */
  async function secondNode(): Promise<{ db: Db; auth: Authenticator }> {
    const db = t.testDb.url ? await openPostgres(t.testDb.url, { poolSize: 2 }) : t.db;
    const auth = new Authenticator(db);
    await auth.start();
    extra.push({ close: async () => (await auth.stop(), t.testDb.url ? await db.close() : undefined) });
    return { db, auth };
  }

  for (const [change, apply, expectation] of [
    ['a revocation', async (s: { keyId: string }) => revokeApiKey(t.db, s.keyId, { type: 'operator' }), 'null'],
    ['a deactivation', async (s: { memberId: string }) => updateMember(t.db, s.memberId, { active: false }, { type: 'operator' }), 'null'],
    ['a demotion', async (s: { memberId: string }) => updateMember(t.db, s.memberId, { role: 'viewer' }, { type: 'operator' }), 'viewer'],
    ['a scope change', async (s: { keyId: string }) => updateApiKeyAccess(t.db, s.keyId, { accessMode: 'custom', scopes: ['usage:read'] }, { type: 'operator' }), 'usage:read'],
    ['a plan change', async (s: { orgId: string }) => updateOrganization(t.db, s.orgId, { plan: 'business' }), 'business'],
  ] as const) {
    it(`drops another node's cached context on the NOTIFY of ${change}`, async () => {
      const { org, memberId, keyId, key } = await seedOrg(t.db, { role: 'admin', plan: 'starter' });
      await addMemberWithKey(t.db, org.id, 'super_admin');
      const node2 = await secondNode();
      const before = await node2.auth.authenticate(bearer(key));
      assert.equal(before?.role, 'admin');
      await (apply as (s: object) => Promise<unknown>)({ keyId, memberId, orgId: org.id });
      await pollUntil(async () => {
        const c = await node2.auth.authenticate(bearer(key));
        const seen = c === null ? 'null' : [c.role, c.plan, ...c.scopes];
        return seen === 'null' ? expectation === 'null' : (seen as string[]).includes(expectation);
      });
    });
  }

  it('serves repeated authentications from the cache, without a query', async () => {
    const { key } = await seedOrg(t.db);
    const counting = countingDb(t.db);
    const auth = new Authenticator(counting.db);
    await auth.start();
    extra.push({ close: () => auth.stop() });
    await auth.authenticate(bearer(key));
    const after1 = counting.lookups();
    for (let i = 0; i < 5; i++) assert.ok(await auth.authenticate(bearer(key)));
    assert.equal(counting.lookups(), after1);
  });

  it('does not cache while the LISTEN connection is down, and drops what it had', async () => {
    const { key } = await seedOrg(t.db);
    const counting = countingDb(t.db);
    const auth = new Authenticator(counting.db);
    await auth.start();
    extra.push({ close: () => auth.stop() });
    await auth.authenticate(bearer(key));
    counting.setListening(false);
    const n = counting.lookups();
    await auth.authenticate(bearer(key));
    await auth.authenticate(bearer(key));
    assert.equal(counting.lookups(), n + 2, 'every request reads the database');
    counting.setListening(true);
    await auth.authenticate(bearer(key));
    assert.equal(counting.lookups(), n + 3, 'the entry from before the outage is gone');
  });

  it('does not cache a lookup that raced with an invalidation', async () => {
    const { key } = await seedOrg(t.db);
    const counting = countingDb(t.db);
    const auth = new Authenticator(counting.db);
    await auth.start();
    extra.push({ close: () => auth.stop() });
    counting.delayNextLookup(() => auth.invalidate());
    await auth.authenticate(bearer(key));
    const n = counting.lookups();
    await auth.authenticate(bearer(key));
    assert.equal(counting.lookups(), n + 1, 'what was read before the invalidation was not kept');
  });

  it('does not cache before start()', async () => {
    const { key } = await seedOrg(t.db);
    const counting = countingDb(t.db);
    const auth = new Authenticator(counting.db);
    await auth.authenticate(bearer(key));
    await auth.authenticate(bearer(key));
    assert.equal(counting.lookups(), 2);
  });

  it('records when a key was last used', async () => {
    const { key, keyId } = await seedOrg(t.db);
    assert.equal((await call(t.app, 'GET', '/v1/me', { key })).status, 200);
    await pollUntil(async () => {
      const { rows } = await t.db.query<{ last_used_at: Date | null }>('select last_used_at from api_keys where id = $1', [keyId]);
      return rows[0].last_used_at !== null;
    });
  });
});

/** Wraps a Db to count key lookups, fake the LISTEN state and stall one lookup. */
function countingDb(inner: Db) {
  let lookups = 0;
  let listening = true;
  let onDelayed: (() => void) | undefined;
  const db: Db = {
    ...inner,
    kind: inner.kind,
    async query(text, params) {
      if (text.includes('from api_keys k')) {
        lookups++;
        if (onDelayed) {
          const during = onDelayed;
          onDelayed = undefined;
          const result = await inner.query(text, params);
          during();
          return result as never;
        }
      }
      return inner.query(text, params);
    },
    exec: (sql) => inner.exec(sql),
    transaction: (fn) => inner.transaction(fn),
    listen: (ch, on, re) => inner.listen(ch, on, re),
    listening: () => listening && inner.listening(),
    close: async () => {},
  };
  return {
    db,
    lookups: () => lookups,
    setListening: (v: boolean) => (listening = v),
    delayNextLookup: (during: () => void) => (onDelayed = during),
  };
}
