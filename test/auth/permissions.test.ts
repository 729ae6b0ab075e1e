import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { lowerRole, outranks, PERMISSIONS, roleHas, ROLES, scopeSetProblem, SCOPES, type Permission, type Role } from '../../src/auth/permissions.ts';
import { addMemberWithKey, call, seedOrg } from '../helpers/app.ts';
import { openTestDb, type TestDb } from '../helpers/db.ts';
import { buildProbeApp, probeModule, type ProbeApp } from '../helpers/probe-app.ts';
import { ROOT } from '../helpers/weir-process.ts';

// The role -> permission matrix, written out by hand from the issue and the
// specification so that a slip in PERMISSIONS cannot agree with itself.
const SA: Role = 'super_admin';
const A: Role = 'admin';
const D: Role = 'developer';
const V: Role = 'viewer';
const EXPECTED: Record<Permission, Role[]> = {
  'endpoints.view': [SA, A, D, V],
  'endpoints.create': [SA, A, D],
  'endpoints.edit': [SA, A, D],
  'endpoints.delete': [SA, A],
  'destinations.view': [SA, A, D, V],
  'agents.view': [SA, A, D, V],
  'agents.assign_destination': [SA, A, D],
  'agents.manage': [SA, A],
  'requests.view': [SA, A, D, V],
  'requests.replay': [SA, A, D],
  'incidents.view': [SA, A, D, V],
  'incidents.update': [SA, A, D],
  'incidents.replay': [SA, A, D],
  'subscriptions.view': [SA, A, D, V],
  'subscriptions.manage': [SA, A, D],
  'members.view': [SA, A, D, V],
  'members.invite': [SA, A],
  'members.manage': [SA, A],
  'usage.view': [SA, A, D, V],
  'api_keys.manage_own': [SA, A, D, V],
  'api_keys.manage': [SA, A],
  'audit_log.view': [SA, A],
};

const PERMISSION_NAMES = Object.keys(PERMISSIONS) as Permission[];

describe('the permission matrix', () => {
  it('names every permission the specification and the issue name, and no other', () => {
    assert.deepEqual([...PERMISSION_NAMES].sort(), Object.keys(EXPECTED).sort());
  });

  for (const permission of Object.keys(EXPECTED) as Permission[]) {
    for (const role of ROLES) {
      const holds = EXPECTED[permission].includes(role);
      it(`${holds ? 'grants' : 'denies'} ${permission} to ${role}`, () => {
        assert.equal(roleHas(role, permission), holds);
      });
    }
  }

  it('keeps viewers read-only: only view permissions and their own keys', () => {
    const held = PERMISSION_NAMES.filter((p) => roleHas('viewer', p));
    assert.deepEqual(
      held.filter((p) => !p.endsWith('.view') && p !== 'api_keys.manage_own'),
      [],
    );
  });

  it('nests the roles: each holds every permission of the roles below it', () => {
    for (const p of PERMISSION_NAMES) {
      for (let i = 1; i < ROLES.length; i++) {
        if (roleHas(ROLES[i], p)) assert.ok(roleHas(ROLES[i - 1], p), `${ROLES[i - 1]} lacks ${p} that ${ROLES[i]} holds`);
      }
    }
  });

  it('ranks roles super_admin > admin > developer > viewer', () => {
    assert.ok(outranks('super_admin', 'admin') && outranks('admin', 'developer') && outranks('developer', 'viewer'));
    assert.ok(!outranks('admin', 'admin') && !outranks('viewer', 'super_admin'));
    assert.equal(lowerRole('super_admin', 'developer'), 'developer');
    assert.equal(lowerRole('viewer', 'admin'), 'viewer');
  });
});

describe('docs/auth.md', () => {
  const doc = readFileSync(`${ROOT}docs/auth.md`, 'utf8');

  it('shows the same role -> permission table as PERMISSIONS', () => {
    const block = /<!-- permission-matrix:start -->([\s\S]*?)<!-- permission-matrix:end -->/.exec(doc)?.[1];
    assert.ok(block, 'docs/auth.md has the permission matrix');
    const lines = block.trim().split('\n');
    const header = lines[0].split('|').map((c) => c.trim()).filter(Boolean);
    assert.deepEqual(header, ['permission', ...ROLES]);
    const documented: Record<string, Role[]> = {};
    for (const line of lines.slice(2)) {
      const [name, ...cells] = line.split('|').map((c) => c.trim()).filter(Boolean);
      documented[name.replace(/`/g, '')] = ROLES.filter((_, i) => {
        assert.ok(cells[i] === 'yes' || cells[i] === 'no', `cell ${name}/${ROLES[i]} is yes or no`);
        return cells[i] === 'yes';
      });
    }
    const actual = Object.fromEntries(PERMISSION_NAMES.map((p) => [p, ROLES.filter((r) => roleHas(r, p))]));
    assert.deepEqual(documented, actual);
  });

  it('lists every scope of SCOPES in its scope table', () => {
    for (const s of SCOPES) assert.match(doc, new RegExp(`\\| \`${s}\` \\|`), `${s} is documented`);
  });
});

describe('scope sets', () => {
  it('accepts a full-access key without scopes and any known non-empty custom set with replay only beside read', () => {
    assert.equal(scopeSetProblem('full', []), undefined);
    for (const s of SCOPES) {
      const set = s === 'requests:replay' ? ['requests:read', s] : [s];
      assert.equal(scopeSetProblem('custom', set), undefined, s);
    }
    assert.equal(scopeSetProblem('custom', [...SCOPES]), undefined);
  });

  it('refuses a custom key with zero scopes, replay without read, an unknown scope, and scopes on a full key', () => {
    assert.match(scopeSetProblem('custom', []) ?? '', /at least one scope/);
    assert.match(scopeSetProblem('custom', ['requests:replay']) ?? '', /requires requests:read/);
    assert.match(scopeSetProblem('custom', ['endpoints:read', 'endpoints:admin']) ?? '', /Unknown scope endpoints:admin/);
    assert.match(scopeSetProblem('full', ['endpoints:read']) ?? '', /takes no scopes/);
  });
});

// Each role against each permission through the real hook: a test-only route
// per permission, called with a full-access key of each role.
describe('the authorization hook enforces each permission for each role', () => {
  let tdb: TestDb;
  let p: ProbeApp;
  const keys = {} as Record<Role, string>;

  before(async () => {
    tdb = await openTestDb();
    p = await buildProbeApp(tdb.db, [
      probeModule(PERMISSION_NAMES.map((permission) => ({ method: 'GET' as const, path: `/test-permission/${permission}`, auth: { scopes: [], permission } }))),
    ]);
    const { org, key } = await seedOrg(tdb.db, { role: 'super_admin' });
    keys.super_admin = key;
    for (const role of ['admin', 'developer', 'viewer'] as const) keys[role] = (await addMemberWithKey(tdb.db, org.id, role)).key;
  });

  after(async () => {
    await p.close();
    await tdb.close();
  });

  for (const permission of Object.keys(EXPECTED) as Permission[]) {
    it(`lets only ${EXPECTED[permission].join(', ')} through a route needing ${permission}`, async () => {
      for (const role of ROLES) {
        const res = await call(p.app, 'GET', `/v1/test-permission/${permission}`, { key: keys[role] });
        const expected = EXPECTED[permission].includes(role) ? 200 : 403;
        assert.equal(res.status, expected, `${role} on ${permission}: ${JSON.stringify(res.json)}`);
        if (expected === 403) {
          assert.equal(res.json.error.code, 'forbidden');
          assert.match(res.json.error.message, new RegExp(`role ${role}.*${permission.replace('.', '\\.')}`));
        }
      }
    });
  }
});
