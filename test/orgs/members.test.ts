import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { grantProblem } from '../../src/auth/grants.ts';
import type { Role } from '../../src/auth/permissions.ts';
import { createMember, updateMember } from '../../src/orgs/members.ts';
import { createOrganization } from '../../src/orgs/organizations.ts';
import { hashPassword, verifyPassword } from '../../src/orgs/passwords.ts';
import { DEFAULT_PLANS, mergePlans } from '../../src/orgs/plans.ts';
import { openTestDb, type TestDb } from '../helpers/db.ts';

const mayGrantRole = (actor: Role, role: Role) => grantProblem(actor, { kind: 'member', newRole: role }) === undefined;

let tdb: TestDb;

before(async () => {
  tdb = await openTestDb();
});

after(async () => {
  await tdb.close();
});

const system = { type: 'system' } as const;

async function orgWith(...roles: ('super_admin' | 'admin' | 'developer' | 'viewer')[]) {
  const org = await createOrganization(tdb.db, { name: 'Org', plan: 'free', region: 'us' });
  const ids: string[] = [];
  for (const [i, role] of roles.entries()) {
    const m = await createMember(tdb.db, { organizationId: org.id, email: `m${i}@example.com`, role }, system);
    assert.ok(m.ok);
    ids.push(m.member.id);
  }
  return { org, ids };
}

describe('members', () => {
  it('leaves exactly one super_admin when two demote each other at the same moment', async () => {
    const { org, ids } = await orgWith('super_admin', 'super_admin');
    const [a, b] = ids;
    const results = await Promise.all([
      tdb.db.transaction((tx) => updateMember(tx, a, { role: 'admin' }, { type: 'member', memberId: b }, { actorRole: 'super_admin' })),
      tdb.db.transaction((tx) => updateMember(tx, b, { role: 'admin' }, { type: 'member', memberId: a }, { actorRole: 'super_admin' })),
    ]);
    assert.deepEqual(results.map((r) => r.ok).sort(), [false, true]);
    assert.ok(results.some((r) => !r.ok && r.reason === 'last_super_admin'));
    const { rows } = await tdb.db.query<{ n: number }>(`select count(*)::int as n from members where organization_id = $1 and role = 'super_admin' and active`, [org.id]);
    assert.equal(rows[0].n, 1);
  });

  it('lets the operator change anyone, except leave no active super_admin', async () => {
    const { ids } = await orgWith('super_admin', 'viewer');
    const promoted = await tdb.db.transaction((tx) => updateMember(tx, ids[1], { role: 'super_admin' }, { type: 'operator' }));
    assert.ok(promoted.ok);
    assert.ok((await tdb.db.transaction((tx) => updateMember(tx, ids[0], { active: false }, { type: 'operator' }))).ok);
    const last = await tdb.db.transaction((tx) => updateMember(tx, ids[1], { active: false }, { type: 'operator' }));
    assert.deepEqual(last, { ok: false, reason: 'last_super_admin' });
  });

  it('scopes updates to the organization given', async () => {
    const { ids } = await orgWith('super_admin', 'viewer');
    const other = await orgWith('super_admin');
    const res = await tdb.db.transaction((tx) => updateMember(tx, ids[1], { role: 'admin' }, system, { organizationId: other.org.id }));
    assert.deepEqual(res, { ok: false, reason: 'not_found' });
  });

  it('never grants a role above the actor’s', () => {
    assert.ok(mayGrantRole('admin', 'admin') && mayGrantRole('admin', 'viewer') && mayGrantRole('super_admin', 'super_admin'));
    assert.ok(!mayGrantRole('admin', 'super_admin') && !mayGrantRole('developer', 'admin') && !mayGrantRole('viewer', 'developer'));
  });

  it('refuses a second member with the same email in any case, inside a transaction that still commits', async () => {
    const { org } = await orgWith('super_admin');
    const first = await createMember(tdb.db, { organizationId: org.id, email: 'dup@example.com', role: 'viewer' }, system);
    assert.ok(first.ok);
    const again = await tdb.db.transaction(async (tx) => {
      const r = await createMember(tx, { organizationId: org.id, email: 'DUP@example.com', role: 'viewer' }, system);
      await tx.query('select 1');
      return r;
    });
    assert.deepEqual(again, { ok: false, reason: 'email_taken' });
  });
});

describe('passwords', () => {
  it('stores scrypt with a per-password salt and verifies only the right password', async () => {
    const h1 = await hashPassword('correct horse battery staple');
    const h2 = await hashPassword('correct horse battery staple');
    assert.match(h1, /^scrypt\$32768\$8\$1\$[A-Za-z0-9+/=]+\$[A-Za-z0-9+/=]+$/);
    assert.notEqual(h1, h2);
    assert.equal(await verifyPassword('correct horse battery staple', h1), true);
    assert.equal(await verifyPassword('correct horse battery stapler', h1), false);
    assert.equal(await verifyPassword('x', 'md5$abc'), false);
  });

  it('is slow on purpose: one hash costs tens of milliseconds at least', async () => {
    const started = performance.now();
    await hashPassword('timing');
    const ms = performance.now() - started;
    assert.ok(ms > 10, `scrypt took ${ms} ms`);
  });

  it('keeps the hash out of what members look like to the API', async () => {
    const { org } = await orgWith('super_admin');
    const m = await createMember(tdb.db, { organizationId: org.id, email: 'pw@example.com', role: 'viewer', password: 'a long enough password' }, system);
    assert.ok(m.ok);
    assert.equal((m.member as unknown as Record<string, unknown>).password_hash, undefined);
    const { rows } = await tdb.db.query<{ password_hash: string }>('select password_hash from members where id = $1', [m.member.id]);
    assert.ok(await verifyPassword('a long enough password', rows[0].password_hash));
  });
});

describe('plans', () => {
  it('merges overrides over the defaults and refuses unknown or mistyped limits', () => {
    const merged = mergePlans({ free: { max_endpoints: 2, incident_replay: true } });
    assert.equal(merged.free.max_endpoints, 2);
    assert.equal(merged.free.incident_replay, true);
    assert.deepEqual(merged.pro, DEFAULT_PLANS.pro);
    assert.equal(DEFAULT_PLANS.free.max_endpoints, 10, 'defaults untouched');
    assert.throws(() => mergePlans({ gold: {} }), /unknown plan "gold"/);
    assert.throws(() => mergePlans({ free: { max_endpoints: -1 } }), /non-negative integer/);
    assert.throws(() => mergePlans({ free: { incident_replay: 'yes' } }), /boolean/);
    assert.throws(() => mergePlans({ free: { seats: 3 } }), /unknown limit "free.seats"/);
    assert.throws(() => mergePlans([]), /JSON object/);
  });

  it('reserves incident replay for Starter and above by default', () => {
    assert.equal(DEFAULT_PLANS.free.incident_replay, false);
    for (const p of ['starter', 'pro', 'business'] as const) assert.equal(DEFAULT_PLANS[p].incident_replay, true);
  });
});
