import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { adminTokenMatches } from '../../src/auth/operator-token.ts';
import { ADMIN_TOKEN, buildTestApp, call, seedOrg, useTestApp } from '../helpers/app.ts';
import { assertErrorEnvelope } from '../http/envelope.ts';

// The operator API (/admin/v1), route by route: happy and error cases, then the token guard.

const t = useTestApp({}, { reset: false });

type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE';
const op = (method: Method, url: string, body?: unknown, token = ADMIN_TOKEN) =>
  call(t.app, method, `/admin/v1${url}`, { body, headers: token ? { authorization: `Bearer ${token}` } : {} });
const UNKNOWN = '01900000-0000-7000-8000-000000000000';

async function newOrg(body: Record<string, unknown> = { name: 'Tenant' }) {
  const res = await op('POST', '/organizations', body);
  assert.equal(res.status, 201, JSON.stringify(res.json));
  return res.json.data as { id: string; name: string; plan: string; region: string };
}

async function newMember(orgId: string, role = 'admin', email = `m${Math.random().toString(36).slice(2)}@example.com`) {
  const res = await op('POST', `/organizations/${orgId}/members`, { email, role });
  assert.equal(res.status, 201, JSON.stringify(res.json));
  return res.json.data as { id: string; email: string; role: string };
}

describe('POST /admin/v1/organizations', () => {
  it('happy: creates an organization with plan free and region WEIR_REGION by default', async () => {
    const org = await newOrg();
    assert.equal(org.name, 'Tenant');
    assert.equal(org.plan, 'free');
    assert.equal(org.region, t.config.region);
    assert.match(org.id, /^[0-9a-f-]{36}$/);
  });

  it('happy: takes a plan and a region', async () => {
    const org = await newOrg({ name: 'EU tenant', plan: 'business', region: 'eu' });
    assert.deepEqual([org.plan, org.region], ['business', 'eu']);
  });

  it('error: refuses a missing name, an unknown plan, a bad region and unknown fields with 400', async () => {
    for (const body of [{}, { name: '' }, { name: 'x', plan: 'gold' }, { name: 'x', region: 'EU' }, { name: 'x', region: 'e' }, { name: 'x', owner: 'me' }]) {
      assertErrorEnvelope(await op('POST', '/organizations', body), 400, 'bad_request');
    }
  });
});

describe('GET /admin/v1/organizations and /organizations/:id', () => {
  it('happy: pages organizations newest first and shows one with its plan limits', async () => {
    const a = await newOrg({ name: 'A' });
    const b = await newOrg({ name: 'B', plan: 'pro' });
    const page = await op('GET', '/organizations?limit=1');
    assert.deepEqual(page.json.data.data.map((o: { id: string }) => o.id), [b.id]);
    assert.equal(page.json.data.meta.has_more, true);
    const next = await op('GET', `/organizations?limit=1&before=${b.id}`);
    assert.deepEqual(next.json.data.data.map((o: { id: string }) => o.id), [a.id]);
    const one = await op('GET', `/organizations/${b.id}`);
    assert.equal(one.status, 200);
    assert.deepEqual(one.json.data.limits, t.config.plans.pro);
  });

  it('error: answers 404 for unknown ids and ids that are not UUIDs, 400 for a bad limit', async () => {
    assertErrorEnvelope(await op('GET', `/organizations/${UNKNOWN}`), 404, 'not_found');
    assertErrorEnvelope(await op('GET', '/organizations/nope'), 404, 'not_found');
    assertErrorEnvelope(await op('GET', '/organizations?limit=0'), 400, 'bad_request');
  });
});

describe('PATCH /admin/v1/organizations/:id', () => {
  it('happy: changes the plan, seen by the organization’s keys at once', async () => {
    const { org, key } = await seedOrg(t.db, { plan: 'free' });
    assert.equal((await call(t.app, 'GET', '/v1/me', { key })).json.data.organization.plan, 'free');
    const res = await op('PATCH', `/organizations/${org.id}`, { plan: 'starter' });
    assert.equal(res.status, 200);
    assert.equal(res.json.data.plan, 'starter');
    assert.equal((await call(t.app, 'GET', '/v1/me', { key })).json.data.organization.plan, 'starter');
  });

  it('error: refuses an empty body, an unknown plan and unknown fields with 400, unknown ids with 404', async () => {
    const org = await newOrg();
    for (const body of [{}, { plan: 'enterprise' }, { region: 'eu' }]) assertErrorEnvelope(await op('PATCH', `/organizations/${org.id}`, body), 400, 'bad_request');
    assertErrorEnvelope(await op('PATCH', `/organizations/${UNKNOWN}`, { plan: 'pro' }), 404, 'not_found');
  });
});

describe('POST /admin/v1/organizations/:id/members', () => {
  it('happy: adds a member with id, email and role', async () => {
    const org = await newOrg();
    const res = await op('POST', `/organizations/${org.id}/members`, { email: 'ops@example.com', role: 'viewer' });
    assert.equal(res.status, 201);
    assert.deepEqual([res.json.data.email, res.json.data.role, res.json.data.active], ['ops@example.com', 'viewer', true]);
  });

  it('happy: stores an optional password only as a scrypt hash', async () => {
    const org = await newOrg();
    const res = await op('POST', `/organizations/${org.id}/members`, { email: 'pw@example.com', role: 'admin', password: 'a very long password' });
    assert.equal(res.status, 201);
    assert.ok(!JSON.stringify(res.json).includes('password'));
    const { rows } = await t.db.query<{ password_hash: string }>('select password_hash from members where id = $1', [res.json.data.id]);
    assert.match(rows[0].password_hash, /^scrypt\$/);
  });

  it('error: refuses bad emails, roles and short passwords (400), unknown organizations (404), taken emails (409)', async () => {
    const org = await newOrg();
    for (const body of [{ email: 'nope', role: 'admin' }, { email: 'a@example.com', role: 'owner' }, { email: 'a@example.com', role: 'admin', password: 'short' }, { role: 'admin' }]) {
      assertErrorEnvelope(await op('POST', `/organizations/${org.id}/members`, body), 400, 'bad_request');
    }
    assertErrorEnvelope(await op('POST', `/organizations/${UNKNOWN}/members`, { email: 'a@example.com', role: 'admin' }), 404, 'not_found');
    await newMember(org.id, 'admin', 'same@example.com');
    assertErrorEnvelope(await op('POST', `/organizations/${org.id}/members`, { email: 'Same@example.com', role: 'viewer' }), 409, 'conflict');
  });
});

describe('GET /admin/v1/organizations/:id/members', () => {
  it('happy: pages the organization’s members', async () => {
    const org = await newOrg();
    const m1 = await newMember(org.id);
    const m2 = await newMember(org.id);
    const res = await op('GET', `/organizations/${org.id}/members`);
    assert.deepEqual(res.json.data.data.map((m: { id: string }) => m.id), [m2.id, m1.id]);
    assert.deepEqual(res.json.data.meta, { count: 2, has_more: false, next_cursor: null });
  });

  it('error: answers 404 for an unknown organization', async () => {
    assertErrorEnvelope(await op('GET', `/organizations/${UNKNOWN}/members`), 404, 'not_found');
  });
});

describe('PATCH /admin/v1/members/:id', () => {
  it('happy: changes role and active, audited with the operator as actor', async () => {
    const org = await newOrg();
    await newMember(org.id, 'super_admin');
    const m = await newMember(org.id, 'developer');
    const res = await op('PATCH', `/members/${m.id}`, { role: 'admin', active: false });
    assert.equal(res.status, 200);
    assert.deepEqual([res.json.data.role, res.json.data.active], ['admin', false]);
    const log = (await op('GET', `/organizations/${org.id}/audit-log`)).json.data.data;
    const change = log.find((e: { action: string; target_id: string }) => e.action === 'member.role_changed' && e.target_id === m.id);
    assert.equal(change.actor_type, 'operator');
    assert.equal(change.actor_id, null);
    assert.deepEqual(change.details, { from: 'developer', to: 'admin' });
    assert.ok(log.some((e: { action: string; target_id: string }) => e.action === 'member.deactivated' && e.target_id === m.id));
  });

  it('error: refuses empty or mistyped bodies (400), unknown members (404), leaving no active super_admin (409)', async () => {
    const org = await newOrg();
    const sa = await newMember(org.id, 'super_admin');
    for (const body of [{}, { active: 'no' }, { role: 'owner' }, { email: 'x@example.com' }]) assertErrorEnvelope(await op('PATCH', `/members/${sa.id}`, body), 400, 'bad_request');
    assertErrorEnvelope(await op('PATCH', `/members/${UNKNOWN}`, { active: false }), 404, 'not_found');
    assertErrorEnvelope(await op('PATCH', `/members/${sa.id}`, { role: 'admin' }), 409, 'conflict');
  });
});

describe('POST /admin/v1/members/:id/api-keys', () => {
  it('happy: mints a full-access key in the organization’s region, shown only here', async () => {
    const org = await newOrg({ name: 'Regional', region: 'apac' });
    const m = await newMember(org.id, 'developer');
    const res = await op('POST', `/members/${m.id}/api-keys`, { name: 'deploy' });
    assert.equal(res.status, 201);
    const d = res.json.data;
    assert.match(d.key, /^wr_live_apac_[0-9A-Za-z]{38}$/);
    assert.equal(d.display_prefix, d.key.slice(0, 'wr_live_apac_'.length + 4));
    assert.deepEqual([d.access_mode, d.created_by, d.member_id], ['full', null, m.id]);
    assert.equal((await call(t.app, 'GET', '/v1/me', { key: d.key })).status, 200);
    const listed = (await op('GET', `/members/${m.id}/api-keys`)).json.data.data;
    assert.equal(listed.length, 1);
    assert.equal(listed[0].key, undefined);
  });

  it('happy: mints a custom key with scopes and an expiry', async () => {
    const org = await newOrg();
    const m = await newMember(org.id);
    const res = await op('POST', `/members/${m.id}/api-keys`, { name: 'r', access_mode: 'custom', scopes: ['requests:read', 'requests:replay'], expires_at: '2099-01-01T00:00:00Z' });
    assert.equal(res.status, 201);
    assert.deepEqual(res.json.data.scopes, ['requests:read', 'requests:replay']);
  });

  it('error: refuses zero scopes, replay without read and unknown scopes (400)', async () => {
    const org = await newOrg();
    const m = await newMember(org.id);
    for (const [body, message] of [
      [{ name: 'x', access_mode: 'custom', scopes: [] }, /at least one scope/],
      [{ name: 'x', access_mode: 'custom', scopes: ['requests:replay'] }, /requires requests:read/],
      [{ name: 'x', access_mode: 'custom', scopes: ['admin:all'] }, /Unknown scope/],
      [{ name: 'x', expires_at: '2001-01-01T00:00:00Z' }, /future/],
      [{ name: 'x', expires_at: 'soon' }, /ISO 8601/],
      [{}, /"name" is required/],
    ] as const) {
      const res = await op('POST', `/members/${m.id}/api-keys`, body);
      assertErrorEnvelope(res, 400, 'bad_request');
      assert.match(res.json.error.message, message);
    }
  });

  it('error: answers 404 for an unknown member and 400 for a deactivated one', async () => {
    assertErrorEnvelope(await op('POST', `/members/${UNKNOWN}/api-keys`, { name: 'x' }), 404, 'not_found');
    const org = await newOrg();
    await newMember(org.id, 'super_admin');
    const m = await newMember(org.id);
    await op('PATCH', `/members/${m.id}`, { active: false });
    assertErrorEnvelope(await op('POST', `/members/${m.id}/api-keys`, { name: 'x' }), 400, 'bad_request');
  });
});

describe('GET /admin/v1/members/:id/api-keys', () => {
  it('error: answers 404 for an unknown member', async () => {
    assertErrorEnvelope(await op('GET', `/members/${UNKNOWN}/api-keys`), 404, 'not_found');
  });
});

describe('DELETE /admin/v1/api-keys/:id', () => {
  it('happy: revokes (204); the key answers 401 from the very next request; audited with key name and time', async () => {
    const org = await newOrg();
    const m = await newMember(org.id);
    const key = (await op('POST', `/members/${m.id}/api-keys`, { name: 'to revoke' })).json.data;
    assert.equal((await call(t.app, 'GET', '/v1/me', { key: key.key })).status, 200);
    const before = Date.now();
    const res = await op('DELETE', `/api-keys/${key.id}`);
    assert.equal(res.status, 204);
    assert.equal(res.res.body, '');
    assertErrorEnvelope(await call(t.app, 'GET', '/v1/me', { key: key.key }), 401, 'unauthorized');
    const log = (await op('GET', `/organizations/${org.id}/audit-log`)).json.data.data;
    const created = log.find((e: { action: string }) => e.action === 'api_key.created');
    const revoked = log.find((e: { action: string }) => e.action === 'api_key.revoked');
    for (const e of [created, revoked]) {
      assert.equal(e.actor_type, 'operator');
      assert.equal(e.target_name, 'to revoke');
      assert.equal(e.target_id, key.id);
      assert.ok(Math.abs(new Date(e.created_at).getTime() - before) < 60_000);
    }
    assert.equal((await op('DELETE', `/api-keys/${key.id}`)).status, 204, 'idempotent');
    assert.equal((await op('GET', `/organizations/${org.id}/audit-log`)).json.data.data.filter((e: { action: string }) => e.action === 'api_key.revoked').length, 1);
  });

  it('error: answers 404 for an unknown key', async () => {
    assertErrorEnvelope(await op('DELETE', `/api-keys/${UNKNOWN}`), 404, 'not_found');
    assertErrorEnvelope(await op('DELETE', '/api-keys/x'), 404, 'not_found');
  });
});

describe('GET /admin/v1/organizations/:id/audit-log', () => {
  it('error: answers 404 for an unknown organization and 400 for a bad cursor', async () => {
    assertErrorEnvelope(await op('GET', `/organizations/${UNKNOWN}/audit-log`), 404, 'not_found');
    const org = await newOrg();
    assertErrorEnvelope(await op('GET', `/organizations/${org.id}/audit-log?before=x`), 400, 'bad_request');
  });
});

describe('POST /admin/v1/organizations/:id/agents', () => {
  it('happy: enrolls an agent and shows its connection token once (development by default)', async () => {
    const org = await newOrg();
    const res = await op('POST', `/organizations/${org.id}/agents`, { name: 'laptop' });
    assert.equal(res.status, 201, JSON.stringify(res.json));
    assert.match(res.json.data.id, /^[0-9a-f-]{36}$/);
    assert.match(res.json.data.token, /^wr_agent_[A-Za-z0-9_-]{43}$/);
    assert.deepEqual([res.json.data.name, res.json.data.environment, res.json.data.organization_id], ['laptop', 'development', org.id]);
    const { rows } = await t.db.query<Record<string, unknown>>('select * from agents where id = $1', [res.json.data.id]);
    assert.ok(!JSON.stringify(rows[0]).includes(res.json.data.token.slice(-20)), 'only a hash is stored');
    const log = (await op('GET', `/organizations/${org.id}/audit-log`)).json.data.data;
    assert.ok(log.some((e: { action: string; actor_type: string }) => e.action === 'agent.enrolled' && e.actor_type === 'operator'));
  });

  it('error: caps production agents at the plan’s max_agents (403 plan_limit), development ones are free', async () => {
    const org = await newOrg({ name: 'Free', plan: 'free' });
    const cap = t.config.plans.free.max_agents;
    for (let i = 0; i < cap; i++) assert.equal((await op('POST', `/organizations/${org.id}/agents`, { name: `prod ${i}`, environment: 'production' })).status, 201);
    assertErrorEnvelope(await op('POST', `/organizations/${org.id}/agents`, { name: 'one too many', environment: 'production' }), 403, 'plan_limit');
    assert.equal((await op('POST', `/organizations/${org.id}/agents`, { name: 'dev', environment: 'development' })).status, 201);
  });

  it('error: refuses a missing name or an unknown environment (400), an unknown organization (404)', async () => {
    const org = await newOrg();
    for (const body of [{}, { name: '' }, { name: 'x', environment: 'staging' }, { name: 'x', port: 3000 }]) {
      assertErrorEnvelope(await op('POST', `/organizations/${org.id}/agents`, body), 400, 'bad_request');
    }
    assertErrorEnvelope(await op('POST', `/organizations/${UNKNOWN}/agents`, { name: 'laptop' }), 404, 'not_found');
  });
});

describe('the operator token', () => {
  const routes: [Method, string][] = [
    ['POST', '/organizations'],
    ['GET', '/organizations'],
    ['GET', `/organizations/${UNKNOWN}`],
    ['PATCH', `/organizations/${UNKNOWN}`],
    ['GET', `/organizations/${UNKNOWN}/audit-log`],
    ['POST', `/organizations/${UNKNOWN}/members`],
    ['GET', `/organizations/${UNKNOWN}/members`],
    ['PATCH', `/members/${UNKNOWN}`],
    ['POST', `/members/${UNKNOWN}/api-keys`],
    ['GET', `/members/${UNKNOWN}/api-keys`],
    ['DELETE', `/api-keys/${UNKNOWN}`],
    ['POST', `/organizations/${UNKNOWN}/agents`],
  ];

  it('answers 401 on every route without the token, with a wrong one, or with an API key', async () => {
    const { key } = await seedOrg(t.db);
    for (const [method, url] of routes) {
      for (const token of ['', 'wrong-token-0123456789', ADMIN_TOKEN + 'x', ADMIN_TOKEN.slice(0, -1), key]) {
        assertErrorEnvelope(await op(method, url, method === 'GET' || method === 'DELETE' ? undefined : {}, token), 401, 'unauthorized');
      }
      const basic = await call(t.app, method, `/admin/v1${url}`, { headers: { authorization: `Basic ${ADMIN_TOKEN}` } });
      assertErrorEnvelope(basic, 401, 'unauthorized');
    }
  });

  it('answers 404 on every route when WEIR_ADMIN_TOKEN is unset, as if the API did not exist', async () => {
    const closed = await buildTestApp(t.db, { adminToken: undefined });
    try {
      for (const [method, url] of routes) {
        const res = await call(closed.app, method, `/admin/v1${url}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
        assertErrorEnvelope(res, 404, 'not_found');
        assert.equal(res.json.error.message, `No route ${method} /admin/v1${url}.`, 'the same answer as a route that does not exist');
      }
    } finally {
      await closed.close();
    }
  });

  // What this checks is correctness only. That the comparison takes constant
  // time comes from its mechanism (crypto.timingSafeEqual on SHA-256 digests
  // of equal length, src/admin/routes.ts), which a timing test on a shared
  // machine could not show reliably.
  it('accepts exactly the bearer token, whatever the length of what is presented', () => {
    assert.equal(adminTokenMatches(`Bearer ${ADMIN_TOKEN}`, ADMIN_TOKEN), true);
    assert.equal(adminTokenMatches(`bearer ${ADMIN_TOKEN}`, ADMIN_TOKEN), true);
    assert.equal(adminTokenMatches(`Bearer ${ADMIN_TOKEN}x`, ADMIN_TOKEN), false);
    assert.equal(adminTokenMatches('Bearer x', ADMIN_TOKEN), false);
    assert.equal(adminTokenMatches(undefined, ADMIN_TOKEN), false);
    assert.equal(adminTokenMatches(ADMIN_TOKEN, ADMIN_TOKEN), false, 'the Bearer scheme is required');
  });
});
