import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { authRoutes } from '../../src/auth/routes.ts';
import { SCOPES } from '../../src/auth/permissions.ts';
import type { RouteAuth } from '../../src/auth/route-access.ts';
import { memberRoutes } from '../../src/orgs/routes.ts';
import { routeModules } from '../../src/routes.ts';
import { addMemberWithKey, ADMIN_TOKEN, call, seedOrg, useTestApp } from '../helpers/app.ts';
import { ROOT } from '../helpers/weir-process.ts';
import { assertErrorEnvelope } from '../http/envelope.ts';

const t = useTestApp({}, { reset: false });

describe('GET /v1/me', () => {
  it('happy: describes the organization, member, key and live permissions', async () => {
    const { key, keyId, memberId, org } = await seedOrg(t.db, { role: 'developer', plan: 'pro', region: 'eu' });
    const res = await call(t.app, 'GET', '/v1/me', { key });
    assert.equal(res.status, 200);
    const d = res.json.data;
    assert.deepEqual(d.organization, { id: org.id, name: 'Acme', plan: 'pro', region: 'eu', limits: t.config.plans.pro });
    assert.equal(d.member.id, memberId);
    assert.equal(d.member.role, 'developer');
    assert.deepEqual(d.api_key, { id: keyId, name: 'test', access_mode: 'full', scopes: [], expires_at: null, effective_role: 'developer' });
    assert.ok(d.permissions.includes('endpoints.create'));
    assert.ok(!d.permissions.includes('endpoints.delete'));
  });

  it('happy: accepts a custom key of any scope and shows its scopes', async () => {
    const { key } = await seedOrg(t.db, { scopes: ['usage:read'] });
    const res = await call(t.app, 'GET', '/v1/me', { key });
    assert.equal(res.status, 200);
    assert.deepEqual(res.json.data.api_key.scopes, ['usage:read']);
  });

  it('error: answers 401 without a valid key', async () => {
    assertErrorEnvelope(await call(t.app, 'GET', '/v1/me'), 401, 'unauthorized');
  });

  it('security: never shows the key, its hash or a password hash', async () => {
    const { key } = await seedOrg(t.db);
    const text = JSON.stringify((await call(t.app, 'GET', '/v1/me', { key })).json);
    assert.ok(!text.includes(key.slice(-20)));
    assert.doesNotMatch(text, /key_hash|password/);
  });
});

describe('GET /v1/health', () => {
  it('happy: answers ok with the database kind and notification state to any valid key', async () => {
    const { key } = await seedOrg(t.db, { role: 'viewer', scopes: ['usage:read'] });
    const res = await call(t.app, 'GET', '/v1/health', { key });
    assert.equal(res.status, 200);
    assert.equal(res.json.data.status, 'ok');
    assert.equal(res.json.data.database.kind, t.db.kind);
    assert.equal(res.json.data.database.reachable, true);
    assert.equal(res.json.data.notifications, 'connected');
  });

  it('error: answers 401 without a valid key', async () => {
    assertErrorEnvelope(await call(t.app, 'GET', '/v1/health', { key: 'wr_live_us_nope' }), 401, 'unauthorized');
  });
});

describe('GET /v1/audit-log', () => {
  it('happy: pages the organization’s key and member events, newest first', async () => {
    const { key, org } = await seedOrg(t.db);
    const d = await addMemberWithKey(t.db, org.id, 'developer');
    await call(t.app, 'PATCH', `/v1/members/${d.memberId}`, { key, body: { role: 'viewer' } });
    await call(t.app, 'DELETE', `/v1/api-keys/${d.keyId}`, { key });
    const first = await call(t.app, 'GET', '/v1/audit-log?limit=2', { key });
    assert.equal(first.status, 200);
    assert.deepEqual(first.json.data.data.map((e: { action: string }) => e.action), ['api_key.revoked', 'member.role_changed']);
    assert.deepEqual(first.json.data.data[1].details, { from: 'developer', to: 'viewer' });
    assert.equal(first.json.data.meta.has_more, true);
    const next = await call(t.app, 'GET', `/v1/audit-log?limit=100&before=${first.json.data.meta.next_cursor}`, { key });
    assert.ok(next.json.data.data.some((e: { action: string }) => e.action === 'api_key.created'));
    assert.equal(next.json.data.meta.has_more, false);
  });

  it('error: refuses a bad limit or cursor with 400', async () => {
    const { key } = await seedOrg(t.db);
    for (const q of ['limit=0', 'limit=101', 'limit=ten', 'before=yesterday', 'since=1']) {
      assertErrorEnvelope(await call(t.app, 'GET', `/v1/audit-log?${q}`, { key }), 400, 'bad_request');
    }
  });

  it('security: closed to developers and viewers (403), and shows nothing of another organization', async () => {
    const { org } = await seedOrg(t.db);
    for (const role of ['developer', 'viewer'] as const) {
      assertErrorEnvelope(await call(t.app, 'GET', '/v1/audit-log', { key: (await addMemberWithKey(t.db, org.id, role)).key }), 403, 'forbidden');
    }
    const other = await seedOrg(t.db);
    const entries = (await call(t.app, 'GET', '/v1/audit-log?limit=100', { key: other.key })).json.data.data;
    assert.ok(entries.length > 0);
    assert.ok(entries.every((e: { organization_id: string }) => e.organization_id === other.org.id));
  });

  it('security: the operator reads the same entries', async () => {
    const { key, org } = await seedOrg(t.db);
    const mine = (await call(t.app, 'GET', '/v1/audit-log?limit=100', { key })).json.data.data;
    const ops = await call(t.app, 'GET', `/admin/v1/organizations/${org.id}/audit-log?limit=100`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    assert.deepEqual(ops.json.data.data, mine);
  });
});

describe('route declarations', () => {
  /** Every route a module declares, with its auth, through Fastify's onRoute hook. */
  async function declaredRoutes(modules: typeof routeModules.v1): Promise<Map<string, RouteAuth | undefined>> {
    const found = new Map<string, RouteAuth | undefined>();
    const { default: Fastify } = await import('fastify');
    const app = Fastify();
    app.addHook('onRoute', (r) => {
      for (const m of [r.method].flat()) if (m !== 'HEAD') found.set(`${m} ${r.url}`, (r.config as { auth?: RouteAuth } | undefined)?.auth);
    });
    await app.register(
      async (v1) => {
        for (const m of modules) await m(v1, { db: t.db, config: t.config, authenticator: t.authenticator, logger: t.app.log as never, urls: { publicUrl: '', ingestUrl: '' } });
      },
      { prefix: '/v1' },
    );
    await app.ready();
    await app.close();
    return found;
  }

  it('every /v1 route of every module declares its authorization', async () => {
    const routes = await declaredRoutes(routeModules.v1);
    assert.ok(routes.size > 5);
    for (const [route, auth] of routes) {
      assert.ok(auth, `${route} declares config.auth`);
      if (!('anyKey' in auth)) for (const s of auth.scopes ?? []) assert.ok((SCOPES as readonly string[]).includes(s), `${route}: ${s} is a scope`);
    }
  });

  it('docs/auth.md documents the auth and member routes exactly as they are declared', async () => {
    const doc = readFileSync(`${ROOT}docs/auth.md`, 'utf8');
    const table = /<!-- route-table:start -->([\s\S]*?)<!-- route-table:end -->/.exec(doc)?.[1] ?? '';
    const documented = new Map<string, { scopes: string; permission: string }>();
    for (const line of table.trim().split('\n').slice(2)) {
      const [route, scopes, permission] = line.split('|').map((c) => c.trim()).filter(Boolean);
      documented.set(route.replace(/`/g, ''), { scopes, permission });
    }
    const routes = await declaredRoutes([authRoutes, memberRoutes]);
    assert.deepEqual([...documented.keys()].sort(), [...routes.keys()].sort());
    for (const [route, auth] of routes) {
      const doc = documented.get(route)!;
      if (auth && 'anyKey' in auth) {
        assert.equal(doc.scopes, 'any valid key', route);
        assert.equal(doc.permission, 'none', route);
      } else if (auth?.fullAccessOnly) {
        assert.equal(doc.scopes, 'full-access keys only', route);
        assert.ok(doc.permission.startsWith(`\`${auth.permission}\``), route);
      } else {
        assert.equal(doc.scopes, (auth?.scopes ?? []).map((s) => `\`${s}\``).join(', '), route);
        assert.equal(doc.permission, `\`${auth?.permission}\``, route);
      }
    }
  });
});
