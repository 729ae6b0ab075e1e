import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { createApiKey } from '../../src/auth/api-keys.ts';
import { ROLES, SCOPES, type Role, type Scope } from '../../src/auth/permissions.ts';
import { createMember } from '../../src/orgs/members.ts';
import { createOrganization } from '../../src/orgs/organizations.ts';
import { useTestApp } from '../helpers/app.ts';

/**
 * The role-by-route matrix (issue 23), generated from docs/auth.md: its
 * route table ("Every route, by key and role") and its permission table.
 * 1. The document's /v1 operations and the table's rows are the same set,
 *    and each route declares what its row says: a new route cannot ship
 *    without its row.
 * 2. For every route, every role, and for each role a full-access key, a
 *    narrowed key holding exactly the route's scopes and one lacking them,
 *    the answer is 403 exactly when the tables say so, and otherwise the
 *    request gets past authorization (unknown ids: a 404 or a 400, never a
 *    401 or 403).
 */

const DOC = readFileSync(new URL('../../docs/auth.md', import.meta.url), 'utf8');
const UNKNOWN_ID = '00000000-0000-7000-8000-000000000000';

interface Row {
  anyKey: boolean;
  fullAccessOnly: boolean;
  scopes: Scope[];
  permission: string | undefined;
}

function tableBetween(marker: string): string[][] {
  const m = DOC.match(new RegExp(`<!-- ${marker}:start -->([\\s\\S]*?)<!-- ${marker}:end -->`));
  assert.ok(m, `docs/auth.md has the ${marker} table`);
  return m[1]
    .split('\n')
    .filter((l) => l.startsWith('|'))
    .slice(2) // header and separator
    .map((l) => l.split('|').slice(1, -1).map((c) => c.trim()));
}

const ticked = (cell: string) => [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1]);

/** route ("GET /v1/x/:id") -> what its row says. */
function routeRows(): Map<string, Row> {
  const rows = new Map<string, Row>();
  for (const [route, scopes, permission] of tableBetween('route-matrix')) {
    const name = ticked(route)[0];
    assert.ok(!rows.has(name), `${name} has one row`);
    rows.set(name, {
      anyKey: scopes === 'any valid key',
      fullAccessOnly: scopes === 'full-access keys only',
      scopes: ticked(scopes) as Scope[],
      permission: ticked(permission)[0],
    });
  }
  return rows;
}

/** permission -> the roles holding it, from the permission table. */
function permissionRows(): Map<string, Set<Role>> {
  const out = new Map<string, Set<Role>>();
  for (const [permission, ...cells] of tableBetween('permission-matrix')) {
    out.set(ticked(permission)[0], new Set(ROLES.filter((_, i) => cells[i] === 'yes')));
  }
  return out;
}

const t = useTestApp({}, { reset: false });

describe('the role-by-route matrix of docs/auth.md', () => {
  let operations: { name: string; method: string; path: string; op: any }[] = [];

  it('has one row per documented /v1 route, and each route declares what its row says', async () => {
    const doc = (await t.app.inject({ method: 'GET', url: '/v1/openapi.json' })).json();
    operations = Object.entries(doc.paths as Record<string, Record<string, any>>)
      .filter(([path]) => path.startsWith('/v1/'))
      .flatMap(([path, ops]) => Object.entries(ops).map(([method, op]) => ({ name: `${method.toUpperCase()} ${path.replace(/\{(\w+)\}/g, ':$1')}`, method: method.toUpperCase(), path, op })));
    const rows = routeRows();
    assert.deepEqual(
      operations.map((o) => o.name).filter((n) => !rows.has(n)),
      [],
      'routes without a row in docs/auth.md (Every route, by key and role): add one',
    );
    assert.deepEqual([...rows.keys()].filter((n) => !operations.some((o) => o.name === n)), [], 'rows for routes that do not exist');
    for (const o of operations) {
      const row = rows.get(o.name)!;
      const declared = o.op['x-weir-auth'] ?? {};
      assert.equal(row.anyKey, Boolean(declared.anyKey), `${o.name}: any key`);
      assert.equal(row.fullAccessOnly, Boolean(declared.fullAccessOnly), `${o.name}: full-access only`);
      assert.deepEqual([...row.scopes].sort(), [...(declared.scopes ?? [])].sort(), `${o.name}: scopes`);
      assert.equal(row.permission, declared.permission, `${o.name}: permission`);
    }
  });

  it('answers 403 exactly where the tables say, for every route, role and narrowed key', { timeout: 10 * 60_000 }, async () => {
    const rows = routeRows();
    const holders = permissionRows();
    const org = await createOrganization(t.db, { name: 'Matrix', plan: 'business', region: 'us' });
    const members = new Map<Role, string>();
    for (const role of ROLES) {
      const m = await createMember(t.db, { organizationId: org.id, email: `${role}@matrix.example`, role }, { type: 'system' });
      assert.ok(m.ok);
      members.set(role, m.member.id);
    }
    const keys = new Map<string, string>();
    const keyFor = async (role: Role, scopes: readonly Scope[] | 'full') => {
      const id = `${role} ${scopes === 'full' ? 'full' : [...scopes].sort().join(',')}`;
      if (!keys.has(id)) {
        const k = await createApiKey(t.db, { memberId: members.get(role)!, name: id, accessMode: scopes === 'full' ? 'full' : 'custom', scopes: scopes === 'full' ? [] : [...scopes] }, { type: 'system' });
        assert.ok(k.ok, id);
        keys.set(id, k.key);
      }
      return keys.get(id)!;
    };

    const mismatches: string[] = [];
    let checked = 0;
    for (const o of operations) {
      const row = rows.get(o.name)!;
      const stream = Object.values(o.op.responses as Record<string, any>).some((r) => r.content?.['text/event-stream']);
      const url = o.path.replace(/\{\w+\}/g, UNKNOWN_ID);
      // a scope the route does not need, and with requests:replay also requests:read (a valid set)
      const other: Scope[] = [SCOPES.find((s) => !row.scopes.includes(s) && s !== 'requests:replay')!];
      for (const role of ROLES) {
        const roleMay = row.permission === undefined || holders.get(row.permission)?.has(role) === true;
        const cases: [string, readonly Scope[] | 'full', boolean][] = [
          ['full key', 'full', roleMay],
          ['narrowed key lacking the scopes', other, row.anyKey || (!row.fullAccessOnly && row.scopes.length === 0 && roleMay)],
        ];
        if (row.scopes.length > 0) {
          const scopes = row.scopes.includes('requests:replay') && !row.scopes.includes('requests:read') ? [...row.scopes, 'requests:read' as Scope] : row.scopes;
          cases.push(['narrowed key with exactly the scopes', scopes, !row.fullAccessOnly && roleMay]);
        }
        for (const [what, scopes, allowed] of cases) {
          if (allowed && stream) continue; // an allowed stream would stay open; refusals answer at once
          const res = await t.app.inject({
            method: o.method as never,
            url,
            headers: { authorization: `Bearer ${await keyFor(role, scopes)}`, ...(o.op.requestBody ? { 'content-type': 'application/json' } : {}) },
            payload: o.op.requestBody ? '{}' : undefined,
          });
          checked++;
          const refused = res.statusCode === 403 && res.json().error?.code === 'forbidden';
          const ok = allowed ? res.statusCode !== 401 && res.statusCode !== 403 && res.statusCode < 500 : refused;
          if (!ok) mismatches.push(`${o.name} as ${role} with a ${what}: expected ${allowed ? 'to pass authorization' : '403'}, got ${res.statusCode} ${res.body.slice(0, 160)}`);
        }
      }
    }
    assert.deepEqual(mismatches, []);
    assert.ok(checked >= operations.length * ROLES.length * 2, `${checked} answers checked`);
  });
});
