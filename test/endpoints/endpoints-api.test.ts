import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createEndpoint, getEndpoint } from '../../src/endpoints/endpoints.ts';
import { mergePlans } from '../../src/orgs/plans.ts';
import { buildTestApp, call, seedOrg, useTestApp } from '../helpers/app.ts';

const t = useTestApp();

const FIELDS = ['id', 'organization_id', 'created_by', 'slug', 'name', 'description', 'forward_url', 'paused', 'created_at', 'updated_at'];

async function create(key: string, body: unknown = { name: 'Stripe' }) {
  const r = await call(t.app, 'POST', '/v1/endpoints', { key, body });
  assert.equal(r.status, 201, JSON.stringify(r.json));
  return r.json.data;
}

describe('happy paths', () => {
  test('POST creates an endpoint with every field of the Endpoint resource', async () => {
    const s = await seedOrg(t.db);
    const r = await call(t.app, 'POST', '/v1/endpoints', { key: s.key, body: { name: 'Stripe', description: 'live', forward_url: 'https://example.com/hook' } });
    assert.equal(r.status, 201);
    const e = r.json.data;
    for (const f of FIELDS) assert.ok(f in e, `missing ${f}`);
    assert.equal(e.organization_id, s.org.id);
    assert.equal(e.created_by, s.memberId);
    assert.match(e.slug, /^[a-z0-9]{16}$/);
    assert.deepEqual([e.name, e.description, e.forward_url, e.paused], ['Stripe', 'live', 'https://example.com/hook', false]);
    assert.ok(!Number.isNaN(Date.parse(e.created_at)) && e.created_at === e.updated_at);
    assert.equal(e.ingest_url, `http://ingest.test/h/${e.slug}`);
  });

  test('optional fields default to null, and null is accepted on create', async () => {
    const s = await seedOrg(t.db);
    const a = await create(s.key, { name: 'a' });
    const b = await create(s.key, { name: 'b', description: null, forward_url: null });
    for (const e of [a, b]) assert.deepEqual([e.description, e.forward_url, e.paused], [null, null, false]);
  });

  test('GET /v1/endpoints lists all of the organization, unpaged, newest first, and nothing of others', async () => {
    const s = await seedOrg(t.db);
    const other = await seedOrg(t.db);
    await create(other.key, { name: 'theirs' });
    const made = [];
    for (let i = 0; i < 30; i++) made.push(await create(s.key, { name: `e${i}` }));
    const r = await call(t.app, 'GET', '/v1/endpoints', { key: s.key });
    assert.equal(r.status, 200);
    assert.ok(Array.isArray(r.json.data), 'data is the array itself (no paging envelope)');
    assert.deepEqual(r.json.data.map((e: any) => e.id), made.map((e) => e.id).reverse());
  });

  test('GET /v1/endpoints/:id returns it; PATCH edits each field; DELETE answers 204 and it is gone', async () => {
    const s = await seedOrg(t.db);
    const e = await create(s.key, { name: 'x', description: 'd', forward_url: 'https://a.example/' });
    const got = await call(t.app, 'GET', `/v1/endpoints/${e.id}`, { key: s.key });
    assert.deepEqual(got.json, { data: e });

    const p1 = await call(t.app, 'PATCH', `/v1/endpoints/${e.id}`, { key: s.key, body: { name: 'renamed', paused: true } });
    assert.equal(p1.status, 200);
    assert.deepEqual([p1.json.data.name, p1.json.data.paused, p1.json.data.description, p1.json.data.forward_url], ['renamed', true, 'd', 'https://a.example/']);
    assert.ok(p1.json.data.updated_at > e.updated_at);
    assert.equal(p1.json.data.slug, e.slug);

    const p2 = await call(t.app, 'PATCH', `/v1/endpoints/${e.id}`, { key: s.key, body: { forward_url: null, description: null, paused: false } });
    assert.deepEqual([p2.json.data.forward_url, p2.json.data.description, p2.json.data.paused, p2.json.data.name], [null, null, false, 'renamed']);

    const p3 = await call(t.app, 'PATCH', `/v1/endpoints/${e.id}`, { key: s.key, body: {} });
    assert.equal(p3.status, 200);
    assert.equal(p3.json.data.name, 'renamed');

    const d = await call(t.app, 'DELETE', `/v1/endpoints/${e.id}`, { key: s.key });
    assert.equal(d.status, 204);
    assert.equal(d.res.body, '');
    assert.equal((await call(t.app, 'GET', `/v1/endpoints/${e.id}`, { key: s.key })).status, 404);
    assert.equal((await call(t.app, 'DELETE', `/v1/endpoints/${e.id}`, { key: s.key })).status, 404);
    assert.equal((await call(t.app, 'PATCH', `/v1/endpoints/${e.id}`, { key: s.key, body: { name: 'z' } })).status, 404);
  });

  test('names count characters, not bytes or UTF-16 units: 100 emoji are fine', async () => {
    const s = await seedOrg(t.db);
    const e = await create(s.key, { name: '🦆'.repeat(100) });
    assert.equal([...e.name].length, 100);
  });
});

describe('validation: 400 bad_request, and a refused request changes nothing', () => {
  const badCreates: [string, unknown][] = [
    ['no name', { description: 'x' }],
    ['empty name', { name: '' }],
    ['101-character name', { name: 'a'.repeat(101) }],
    ['name not a string', { name: 42 }],
    ['name null', { name: null }],
    ['name with NUL', { name: 'a\u0000b' }],
    ['description a number', { name: 'a', description: 5 }],
    ['description too long', { name: 'a', description: 'd'.repeat(2001) }],
    ['http:// forward_url', { name: 'a', forward_url: 'http://example.com/' }],
    ['ftp forward_url', { name: 'a', forward_url: 'ftp://example.com/' }],
    ['forward_url without host', { name: 'a', forward_url: 'https://' }],
    ['forward_url with spaces', { name: 'a', forward_url: 'https://exa mple.com/' }],
    ['forward_url not a string', { name: 'a', forward_url: true }],
    ['forward_url with user:password', { name: 'a', forward_url: 'https://user:secret@example.com/hook' }],
    ['forward_url with a user name only', { name: 'a', forward_url: 'https://user@example.com/hook' }],
    ['unknown field', { name: 'a', colour: 'red' }],
    ['slug given', { name: 'a', slug: 'aaaaaaaaaaaaaaaa' }],
    ['paused on create', { name: 'a', paused: true }],
    ['array body', [{ name: 'a' }]],
    ['not JSON', '{"name": '],
  ];
  for (const [what, body] of badCreates) {
    test(`POST refuses ${what}`, async () => {
      const s = await seedOrg(t.db);
      const r = await call(t.app, 'POST', '/v1/endpoints', { key: s.key, body });
      assert.equal(r.status, 400, JSON.stringify(r.json));
      assert.equal(r.json.error.code, 'bad_request');
      assert.equal(typeof r.json.error.message, 'string');
      const { rows } = await t.db.query<{ n: number }>('select count(*)::int as n from endpoints');
      assert.equal(rows[0].n, 0);
    });
  }

  test('a 100-character name is accepted', async () => {
    const s = await seedOrg(t.db);
    assert.equal((await create(s.key, { name: 'a'.repeat(100) })).name.length, 100);
  });

  const badPatches: [string, unknown][] = [
    ['paused as a string', { paused: 'true' }],
    ['paused null', { paused: null }],
    ['name null', { name: null }],
    ['empty name', { name: '' }],
    ['101-character name', { name: 'n'.repeat(101) }],
    ['http:// forward_url', { forward_url: 'http://example.com' }],
    ['forward_url with user:password', { forward_url: 'https://user:secret@example.com/hook' }],
    ['slug (immutable)', { slug: 'bbbbbbbbbbbbbbbb' }],
    ['id', { id: '00000000-0000-7000-8000-000000000000' }],
    ['created_by', { created_by: null }],
    ['a valid field next to an invalid one', { name: 'changed', forward_url: 'http://x' }],
    ['a valid field next to an unknown one', { name: 'changed', extra: 1 }],
  ];
  test('says why a forward_url with credentials is refused', async () => {
    const s = await seedOrg(t.db);
    const r = await call(t.app, 'POST', '/v1/endpoints', { key: s.key, body: { name: 'a', forward_url: 'https://user:secret@example.com/hook' } });
    assert.equal(r.status, 400);
    assert.match(r.json.error.message, /forward_url.*must not carry credentials/);
  });

  for (const [what, body] of badPatches) {
    test(`PATCH refuses ${what}`, async () => {
      const s = await seedOrg(t.db);
      const e = await create(s.key, { name: 'orig', forward_url: 'https://ok.example/' });
      const r = await call(t.app, 'PATCH', `/v1/endpoints/${e.id}`, { key: s.key, body });
      assert.equal(r.status, 400, JSON.stringify(r.json));
      assert.equal(r.json.error.code, 'bad_request');
      assert.deepEqual((await call(t.app, 'GET', `/v1/endpoints/${e.id}`, { key: s.key })).json.data, e);
    });
  }
});

describe('slugs', () => {
  test('are unique, 16 lowercase alphanumerics, and immutable', async () => {
    const s = await seedOrg(t.db);
    const slugs = new Set<string>();
    for (let i = 0; i < 10; i++) slugs.add((await create(s.key, { name: `e${i}` })).slug);
    assert.equal(slugs.size, 10);
    for (const slug of slugs) assert.match(slug, /^[a-z0-9]{16}$/);
  });

  test('a deleted endpoint\'s slug stays reserved and a live slug is never reused', async () => {
    const s = await seedOrg(t.db);
    const first = await create(s.key, { name: 'old' });
    const live = await create(s.key, { name: 'live' });
    await call(t.app, 'DELETE', `/v1/endpoints/${first.id}`, { key: s.key });
    const { rows } = await t.db.query<{ slug: string }>('select slug from retired_slugs');
    assert.deepEqual(rows.map((r) => r.slug), [first.slug]);
    // Force the generator to offer the retired slug, then the live one, then a fresh one.
    const offers = [first.slug, live.slug, 'freshslug0000001'];
    const r = await createEndpoint(t.db, t.config.plans, s.org.id, { name: 'new', createdBy: s.memberId }, () => offers.shift()!);
    assert.ok(r.ok);
    assert.equal(r.endpoint.slug, 'freshslug0000001');
    assert.equal(offers.length, 0);
  });
});

describe('plan limit', () => {
  test('POST beyond max_endpoints answers 429 plan_limit; paused endpoints count', async () => {
    const db = t.db;
    const limited = await buildTestApp(db, { plans: mergePlans({ starter: { max_endpoints: 2 } }) });
    try {
      const s = await seedOrg(db, { plan: 'starter' });
      const a = await call(limited.app, 'POST', '/v1/endpoints', { key: s.key, body: { name: 'a' } });
      await call(limited.app, 'POST', '/v1/endpoints', { key: s.key, body: { name: 'b' } });
      await call(limited.app, 'PATCH', `/v1/endpoints/${a.json.data.id}`, { key: s.key, body: { paused: true } });
      const r = await call(limited.app, 'POST', '/v1/endpoints', { key: s.key, body: { name: 'c' } });
      assert.equal(r.status, 429);
      assert.equal(r.json.error.code, 'plan_limit');
      assert.equal(typeof r.json.error.message, 'string');
      // Deleting one frees a place.
      await call(limited.app, 'DELETE', `/v1/endpoints/${a.json.data.id}`, { key: s.key });
      assert.equal((await call(limited.app, 'POST', '/v1/endpoints', { key: s.key, body: { name: 'c' } })).status, 201);
    } finally {
      await limited.close();
    }
  });

  test('concurrent creates never exceed the limit', async () => {
    const limited = await buildTestApp(t.db, { plans: mergePlans({ free: { max_endpoints: 3 } }) });
    try {
      const s = await seedOrg(t.db, { plan: 'free' });
      const results = await Promise.all(Array.from({ length: 12 }, (_, i) => call(limited.app, 'POST', '/v1/endpoints', { key: s.key, body: { name: `c${i}` } })));
      const statuses = results.map((r) => r.status).sort();
      assert.deepEqual(statuses, [201, 201, 201, ...Array(9).fill(429)]);
      const { rows } = await t.db.query<{ n: number }>('select count(*)::int as n from endpoints where organization_id = $1', [s.org.id]);
      assert.equal(rows[0].n, 3);
    } finally {
      await limited.close();
    }
  });

  test('the limit follows the organization\'s current plan', async () => {
    const limited = await buildTestApp(t.db, { plans: mergePlans({ free: { max_endpoints: 1 }, pro: { max_endpoints: 5 } }) });
    try {
      const s = await seedOrg(t.db, { plan: 'free' });
      assert.equal((await call(limited.app, 'POST', '/v1/endpoints', { key: s.key, body: { name: 'a' } })).status, 201);
      assert.equal((await call(limited.app, 'POST', '/v1/endpoints', { key: s.key, body: { name: 'b' } })).status, 429);
      await t.db.query(`update organizations set plan = 'pro' where id = $1`, [s.org.id]);
      assert.equal((await call(limited.app, 'POST', '/v1/endpoints', { key: s.key, body: { name: 'b' } })).status, 201);
    } finally {
      await limited.close();
    }
  });
});

describe('tenancy and deletion', () => {
  test("another organization's endpoint answers 404 to GET, PATCH and DELETE and is left untouched", async () => {
    const a = await seedOrg(t.db);
    const b = await seedOrg(t.db);
    const e = await create(a.key);
    for (const [method, body] of [['GET'], ['PATCH', { paused: true }], ['DELETE']] as const) {
      const r = await call(t.app, method, `/v1/endpoints/${e.id}`, { key: b.key, body });
      assert.equal(r.status, 404, method);
      assert.equal(r.json.error.code, 'not_found');
    }
    assert.deepEqual(await getEndpoint(t.db, a.org.id, e.id).then((x) => x && { paused: x.paused }), { paused: false });
  });

  test('malformed and unknown ids answer 404', async () => {
    const s = await seedOrg(t.db);
    for (const id of ['nope', '123', '01890000-0000-7000-8000-000000000000']) {
      assert.equal((await call(t.app, 'GET', `/v1/endpoints/${id}`, { key: s.key })).status, 404);
    }
  });

  test('delete cascades the captured requests', async () => {
    const s = await seedOrg(t.db);
    const keep = await create(s.key, { name: 'keep' });
    const gone = await create(s.key, { name: 'gone' });
    for (const e of [keep, gone]) {
      await t.db.query(
        `insert into captured_requests (id, organization_id, endpoint_id, received_at, method, path, query, headers, body, body_size)
         values (gen_random_uuid(), $1, $2, now(), 'POST', '', '', '[]', '\\x00', 1)`,
        [s.org.id, e.id],
      );
    }
    await call(t.app, 'DELETE', `/v1/endpoints/${gone.id}`, { key: s.key });
    const { rows } = await t.db.query<{ endpoint_id: string }>('select endpoint_id from captured_requests');
    assert.deepEqual(rows.map((r) => r.endpoint_id), [keep.id]);
  });
});
