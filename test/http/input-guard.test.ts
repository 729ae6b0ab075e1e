import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { inputProblem, MAX_DEPTH } from '../../src/http/input-guard.ts';
import { ADMIN_TOKEN, call, seedOrg, useTestApp } from '../helpers/app.ts';
import { seedIncident } from '../incidents/helpers.ts';
import { assertErrorEnvelope } from './envelope.ts';

// Issue 23, defect 2: a NUL character in any text field answered 500 from
// PostgreSQL. One hook (src/http/input-guard.ts) refuses it, with lone
// surrogates and deep nesting, for every route.

const t = useTestApp({}, { reset: false });

describe('inputProblem', () => {
  it('accepts ordinary text, emoji (a surrogate pair) and nesting up to the limit', () => {
    let deep: unknown = 'x';
    for (let i = 0; i < MAX_DEPTH; i++) deep = [deep];
    assert.equal(inputProblem({ name: 'Café 🚀', tags: ['a', { b: 'c' }], n: 1, ok: null }, 'body'), undefined);
    assert.equal(inputProblem(deep, 'body'), undefined);
  });

  it('names the field holding a NUL, a lone surrogate, a bad key or too deep a nesting', () => {
    assert.match(inputProblem({ a: { b: ['x', 'y\u0000'] } }, 'body')!, /^Field "a\.b\.1" contains a NUL/);
    assert.match(inputProblem({ name: 'bad \ud800 half' }, 'body')!, /^Field "name" contains a lone UTF-16 surrogate/);
    assert.match(inputProblem({ name: 'bad \udc00 half' }, 'body')!, /lone UTF-16 surrogate/);
    assert.match(inputProblem({ headers: { 'x\u0000': 'v' } }, 'body')!, /^Field "headers\.\(a key\)" contains a NUL/);
    assert.match(inputProblem({ q: '\u0000' }, 'querystring')!, /^Query parameter "q" contains a NUL/);
    assert.match(inputProblem('\u0000', 'body')!, /^The JSON body contains a NUL/);
    let deep: unknown = 'x';
    for (let i = 0; i < 100_000; i++) deep = { a: deep };
    assert.match(inputProblem(deep, 'body')!, /nests deeper than 32 levels/);
  });
});

describe('every text field through the real app answers 400 bad_request, and stores nothing', () => {
  it('refuses NUL in each field the probe found answering 500', async () => {
    const { org, key, memberId } = await seedOrg(t.db, { plan: 'business' });
    const ep = (await call(t.app, 'POST', '/v1/endpoints', { key, body: { name: 'ep' } })).json.data;
    const dest = (await call(t.app, 'POST', '/v1/destinations', { key, body: { name: 'd', url: 'https://example.com/hook' } })).json.data;
    const agent = (await call(t.app, 'POST', '/v1/agents', { key, body: { name: 'laptop' } })).json.data;
    const inc = await seedIncident(t.db, org.id, { n: 1 });
    const nul = 'a\u0000b';
    const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
    const cases: [string, 'GET' | 'POST' | 'PATCH', string, unknown, Record<string, string>?][] = [
      ['destination name (create)', 'POST', '/v1/destinations', { name: nul, url: 'https://example.com/hook' }],
      ['destination name (PATCH)', 'PATCH', `/v1/destinations/${dest.id}`, { name: nul }],
      ['destination name (attach)', 'POST', `/v1/endpoints/${ep.id}/destinations`, { destination_id: dest.id, name: nul }],
      ['agent name (create)', 'POST', '/v1/agents', { name: nul }],
      ['agent name (PATCH)', 'PATCH', `/v1/agents/${agent.id}`, { name: nul }],
      ['member email', 'POST', '/v1/members', { email: `x${nul}@example.com`, role: 'viewer' }],
      ['incident update body', 'POST', `/v1/incidents/${inc.incidentId}/updates`, { body: nul }],
      ['API key name', 'POST', '/v1/api-keys', { name: nul }],
      ['API key name (admin)', 'POST', `/admin/v1/members/${memberId}/api-keys`, { name: nul }, admin],
      ['organization name (admin, create)', 'POST', '/admin/v1/organizations', { name: nul }, admin],
      ['organization name (admin, PATCH)', 'PATCH', `/admin/v1/organizations/${org.id}`, { name: nul }, admin],
      ['capture search', 'GET', `/v1/endpoints/${ep.id}/requests?q=%00`, undefined],
      ['a lone surrogate in a name', 'POST', '/v1/agents', { name: 'half \ud83d' }],
    ];
    const before = await t.db.query<{ n: number }>(`select (select count(*) from destinations)::int + (select count(*) from agents)::int + (select count(*) from members)::int + (select count(*) from incident_updates)::int + (select count(*) from api_keys)::int + (select count(*) from organizations)::int as n`);
    for (const [what, method, url, body, headers] of cases) {
      const res = await call(t.app, method, url, { key: headers ? undefined : key, body, headers });
      assertErrorEnvelope(res, 400, 'bad_request');
      assert.match(res.json.error.message, /NUL|surrogate/, what);
    }
    const after = await t.db.query<{ n: number }>(`select (select count(*) from destinations)::int + (select count(*) from agents)::int + (select count(*) from members)::int + (select count(*) from incident_updates)::int + (select count(*) from api_keys)::int + (select count(*) from organizations)::int as n`);
    assert.equal(after.rows[0].n, before.rows[0].n, 'nothing was stored');
    const names = await call(t.app, 'GET', `/v1/destinations/${dest.id}`, { key });
    assert.equal(names.json.data.name, 'd');
  });

  it('refuses a JSON key holding a NUL and a body nested deeper than the limit', async () => {
    const { key } = await seedOrg(t.db);
    const keyed = await call(t.app, 'POST', '/v1/endpoints', { key, body: '{"name":"x","response":{"status":200,"headers":{"x\\u0000":"1"}}}' });
    assertErrorEnvelope(keyed, 400, 'bad_request');
    const deep = await call(t.app, 'POST', '/v1/endpoints', { key, body: `{"name":"x","response":${'['.repeat(50_000)}${']'.repeat(50_000)}}` });
    assertErrorEnvelope(deep, 400, 'bad_request');
  });

  it('authenticates first: a NUL in the body of a request without a key is still a 401', async () => {
    const res = await call(t.app, 'POST', '/v1/agents', { body: { name: '\u0000' } });
    assertErrorEnvelope(res, 401, 'unauthorized');
  });
});
