import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { AuthContext } from '../../src/auth/authenticate.ts';
import { SCOPES, type Scope } from '../../src/auth/permissions.ts';
import { authorizationProblem } from '../../src/auth/route-access.ts';
import { addMemberWithKey, call, seedOrg } from '../helpers/app.ts';
import { openTestDb, type TestDb } from '../helpers/db.ts';
import { buildProbeApp, probeModule, type ProbeApp } from '../helpers/probe-app.ts';

// The scope matrix: for each scope, a custom key holding only it calls what
// it unlocks and gets 403 on everything else. requests:replay cannot exist
// without requests:read (refused at creation), so its key holds both.

function scopesOfKeyFor(scope: Scope): Scope[] {
  return scope === 'requests:replay' ? ['requests:read', 'requests:replay'] : [scope];
}

/** A scope as a path segment: a colon would start a route parameter. */
function slug(scope: Scope): string {
  return scope.replace(':', '-');
}

function ctx(overrides: Partial<AuthContext> = {}): AuthContext {
  return {
    keyId: 'k',
    keyName: 'k',
    organizationId: 'o',
    organizationName: 'o',
    plan: 'starter',
    region: 'us',
    memberId: 'm',
    memberEmail: 'm@example.com',
    memberRole: 'super_admin',
    role: 'super_admin',
    accessMode: 'custom',
    scopes: [],
    expiresAt: null,
    ...overrides,
  };
}

describe('authorizationProblem', () => {
  for (const scope of SCOPES) {
    it(`lets a key with only ${scope} through a route needing ${scope}, and no route needing another scope`, () => {
      const key = ctx({ scopes: scopesOfKeyFor(scope) });
      assert.equal(authorizationProblem(key, { scopes: [scope] }), undefined);
      for (const other of SCOPES.filter((s) => !scopesOfKeyFor(scope).includes(s))) {
        assert.equal(authorizationProblem(key, { scopes: [other] }), `This key lacks the scope ${other}.`);
      }
    });
  }

  it('needs every scope a route lists, naming the missing ones', () => {
    const key = ctx({ scopes: ['subscriptions:read'] });
    assert.equal(authorizationProblem(key, { scopes: ['subscriptions:read', 'requests:read'] }), 'This key lacks the scope requests:read.');
    assert.equal(authorizationProblem(ctx({ scopes: ['usage:read'] }), { scopes: ['subscriptions:read', 'requests:read'] }), 'This key lacks the scopes subscriptions:read, requests:read.');
  });

  it('skips the scope check for full-access keys but never the permission check', () => {
    const full = ctx({ accessMode: 'full', role: 'viewer', memberRole: 'viewer' });
    assert.equal(authorizationProblem(full, { scopes: ['endpoints:read'], permission: 'endpoints.view' }), undefined);
    assert.match(authorizationProblem(full, { scopes: ['endpoints:write'], permission: 'endpoints.delete' }) ?? '', /role viewer.*endpoints\.delete/);
  });

  it('checks the permission after the scope for custom keys: scoping only narrows', () => {
    const viewerWithWrite = ctx({ scopes: ['endpoints:write'], role: 'viewer', memberRole: 'viewer' });
    assert.match(authorizationProblem(viewerWithWrite, { scopes: ['endpoints:write'], permission: 'endpoints.create' }) ?? '', /lacks the permission endpoints\.create/);
  });

  it('lets any valid key through anyKey routes, whatever its scopes or role', () => {
    assert.equal(authorizationProblem(ctx({ scopes: ['usage:read'], role: 'viewer' }), { anyKey: true }), undefined);
  });

  it('closes full-access-only routes to custom keys, even with every scope', () => {
    assert.equal(authorizationProblem(ctx({ scopes: [...SCOPES] }), { fullAccessOnly: true }), 'This route needs a full-access key.');
    assert.equal(authorizationProblem(ctx({ accessMode: 'full' }), { fullAccessOnly: true }), undefined);
  });

  it('refuses a route that declares nothing: the default is closed', () => {
    assert.equal(authorizationProblem(ctx({ accessMode: 'full' }), undefined), 'This route is not available to API keys.');
  });
});

describe('the scope matrix through the real hook and routes', () => {
  let tdb: TestDb;
  let p: ProbeApp;
  let orgId: string;
  const keyFor = {} as Record<Scope, string>;
  let fullKey: string;

  before(async () => {
    tdb = await openTestDb();
    // One test-only route per scope (several belong to routes other modules build):
    // the real hook decides on them exactly as on a real route.
    p = await buildProbeApp(tdb.db, [
      probeModule([
        ...SCOPES.map((scope) => ({ method: 'GET' as const, path: `/test-scope/${slug(scope)}`, auth: { scopes: [scope] } })),
        { method: 'GET', path: '/test-scope/undeclared', auth: undefined },
      ]),
    ]);
    const seeded = await seedOrg(tdb.db, { role: 'super_admin' });
    orgId = seeded.org.id;
    fullKey = seeded.key;
    for (const scope of SCOPES) keyFor[scope] = (await addMemberWithKey(tdb.db, orgId, 'super_admin', scopesOfKeyFor(scope))).key;
  });

  after(async () => {
    await p.close();
    await tdb.close();
  });

  for (const scope of SCOPES) {
    it(`a key with only ${scope} reaches the route it unlocks and gets 403 on every other scope's route`, async () => {
      const key = keyFor[scope];
      assert.equal((await call(p.app, 'GET', `/v1/test-scope/${slug(scope)}`, { key })).status, 200);
      for (const other of SCOPES.filter((s) => !scopesOfKeyFor(scope).includes(s))) {
        const res = await call(p.app, 'GET', `/v1/test-scope/${slug(other)}`, { key });
        assert.equal(res.status, 403, `${scope} key on ${other}`);
        assert.deepEqual(res.json, { error: { code: 'forbidden', message: `This key lacks the scope ${other}.` } });
      }
    });

    it(`a key with only ${scope} reaches /v1/me and /v1/health and is refused key management and the audit log`, async () => {
      const key = keyFor[scope];
      assert.equal((await call(p.app, 'GET', '/v1/me', { key })).status, 200);
      assert.equal((await call(p.app, 'GET', '/v1/health', { key })).status, 200);
      for (const [method, url, body] of [
        ['GET', '/v1/api-keys'],
        ['POST', '/v1/api-keys', { name: 'wider' }],
        ['GET', '/v1/audit-log'],
      ] as const) {
        const res = await call(p.app, method, url, { key, body });
        assert.equal(res.status, 403, `${scope} key on ${method} ${url}`);
        assert.equal(res.json.error.message, 'This route needs a full-access key.');
      }
    });

    it(`a key with only ${scope} reaches the member routes only through the members scopes`, async () => {
      const key = keyFor[scope];
      const list = await call(p.app, 'GET', '/v1/members', { key });
      assert.equal(list.status, scope === 'members:manage' ? 200 : 403, JSON.stringify(list.json));
      const invite = await call(p.app, 'POST', '/v1/members', { key, body: { email: `by-${scope.replace(':', '-')}@example.com`, role: 'viewer' } });
      assert.equal(invite.status, scope === 'members:invite' ? 201 : 403, JSON.stringify(invite.json));
      const someone = (await call(p.app, 'GET', '/v1/members', { key: fullKey })).json.data.data[0].id;
      const patch = await call(p.app, 'PATCH', `/v1/members/${someone}`, { key, body: { role: 'super_admin' } });
      assert.equal(patch.status, scope === 'members:manage' ? 200 : 403, JSON.stringify(patch.json));
    });
  }

  it('a full-access key reaches every scope route', async () => {
    for (const scope of SCOPES) assert.equal((await call(p.app, 'GET', `/v1/test-scope/${slug(scope)}`, { key: fullKey })).status, 200, scope);
  });

  it('a route declaring no authorization refuses every key, full access included', async () => {
    const res = await call(p.app, 'GET', '/v1/test-scope/undeclared', { key: fullKey });
    assert.equal(res.status, 403);
    assert.equal(res.json.error.message, 'This route is not available to API keys.');
  });
});
