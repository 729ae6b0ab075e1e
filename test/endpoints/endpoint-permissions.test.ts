import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Role, Scope } from '../../src/auth/permissions.ts';
import { addMemberWithKey, call, seedOrg, useTestApp } from '../helpers/app.ts';

const t = useTestApp();

/** An organization with one endpoint, and a key of the given role and scopes (full access when scopes is undefined). */
async function setup(role: Role, scopes?: Scope[]) {
  const owner = await seedOrg(t.db);
  const e = (await call(t.app, 'POST', '/v1/endpoints', { key: owner.key, body: { name: 'e' } })).json.data;
  const k = await addMemberWithKey(t.db, owner.org.id, role, scopes);
  return { e, key: k.key };
}

async function statuses(key: string, id: string) {
  return {
    list: (await call(t.app, 'GET', '/v1/endpoints', { key })).status,
    get: (await call(t.app, 'GET', `/v1/endpoints/${id}`, { key })).status,
    create: (await call(t.app, 'POST', '/v1/endpoints', { key, body: { name: 'n' } })).status,
    edit: (await call(t.app, 'PATCH', `/v1/endpoints/${id}`, { key, body: { name: 'm' } })).status,
    delete: (await call(t.app, 'DELETE', `/v1/endpoints/${id}`, { key })).status,
  };
}

describe('role permissions (full-access keys)', () => {
  test('a viewer may list and view, not create, edit or delete', async () => {
    const { e, key } = await setup('viewer');
    assert.deepEqual(await statuses(key, e.id), { list: 200, get: 200, create: 403, edit: 403, delete: 403 });
  });

  test('a developer may create and edit, not delete', async () => {
    const { e, key } = await setup('developer');
    assert.deepEqual(await statuses(key, e.id), { list: 200, get: 200, create: 201, edit: 200, delete: 403 });
  });

  for (const role of ['admin', 'super_admin'] as const) {
    test(`an ${role} may do everything`, async () => {
      const { e, key } = await setup(role);
      assert.deepEqual(await statuses(key, e.id), { list: 200, get: 200, create: 201, edit: 200, delete: 204 });
    });
  }

  test('a demoted creator loses what the new role lacks at once', async () => {
    const owner = await seedOrg(t.db);
    const dev = await addMemberWithKey(t.db, owner.org.id, 'developer');
    assert.equal((await call(t.app, 'POST', '/v1/endpoints', { key: dev.key, body: { name: 'x' } })).status, 201);
    await t.db.query(`update members set role = 'viewer' where id = $1`, [dev.memberId]);
    t.authenticator.invalidate();
    assert.equal((await call(t.app, 'POST', '/v1/endpoints', { key: dev.key, body: { name: 'y' } })).status, 403);
  });
});

describe('scopes (custom keys of an admin)', () => {
  test('endpoints:read lists and views; writing needs endpoints:write', async () => {
    const { e, key } = await setup('admin', ['endpoints:read']);
    assert.deepEqual(await statuses(key, e.id), { list: 200, get: 200, create: 403, edit: 403, delete: 403 });
  });

  test('endpoints:write alone creates, edits and deletes but cannot read', async () => {
    const { e, key } = await setup('admin', ['endpoints:write']);
    const s = await statuses(key, e.id);
    assert.deepEqual(s, { list: 403, get: 403, create: 201, edit: 200, delete: 204 });
  });

  test('a key without either scope gets 403 forbidden on every endpoint route', async () => {
    const { e, key } = await setup('admin', ['requests:read']);
    assert.deepEqual(await statuses(key, e.id), { list: 403, get: 403, create: 403, edit: 403, delete: 403 });
    const r = await call(t.app, 'GET', '/v1/endpoints', { key });
    assert.equal(r.json.error.code, 'forbidden');
  });

  test('listing needs only the scope, not endpoints.view (the specification\'s rule); a viewer with the scope lists', async () => {
    const { e, key } = await setup('viewer', ['endpoints:read']);
    assert.equal((await statuses(key, e.id)).list, 200);
  });
});

test('no key, or a bad key, answers 401 unauthorized', async () => {
  for (const headers of [{}, { authorization: 'Bearer nope' }] as Record<string, string>[]) {
    const r = await call(t.app, 'GET', '/v1/endpoints', { headers });
    assert.equal(r.status, 401);
    assert.equal(r.json.error.code, 'unauthorized');
  }
});
