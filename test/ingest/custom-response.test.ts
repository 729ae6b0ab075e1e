import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { call, seedOrg } from '../helpers/app.ts';
import { afterEndpointNotify } from '../helpers/endpoint-notify.ts';
import { openTestDb, type TestDb } from '../helpers/db.ts';
import { endpointFor, send, storedCaptures, startHarness, type Harness } from './harness.ts';

// Issue 28 item 6: an endpoint may answer captures with its own status,
// headers and body (to watch how a provider retries), still only after the
// capture commits. Bad settings are refused with 400 and change nothing.

let t: TestDb;
let h: Harness;
before(async () => {
  t = await openTestDb();
  h = await startHarness(t.db);
});
beforeEach(() => t.reset());
after(async () => {
  await h.close();
  await t.close();
});

const KB64 = 64 * 1024;

async function setup(response?: unknown) {
  const s = await seedOrg(t.db);
  const body = response === undefined ? { name: 'hook' } : { name: 'hook', response };
  const created = await call(h.api.app, 'POST', '/v1/endpoints', { key: s.key, body });
  assert.equal(created.status, 201, JSON.stringify(created.json));
  return { s, endpoint: created.json.data };
}

/** A PATCH whose change the ingest listener's cache has taken in (test/helpers/endpoint-notify.ts). */
function patchEndpoint(key: string, endpoint: { id: string; slug: string }, body: object) {
  return afterEndpointNotify(t.db, endpoint.slug, () => call(h.api.app, 'PATCH', `/v1/endpoints/${endpoint.id}`, { key, body }));
}

describe('custom ingest response', () => {
  test('the default stays 200 {"request_id"}, and the resource says response: null', async () => {
    const { endpoint } = await setup();
    assert.equal(endpoint.response, null);
    const r = await send(h.port, 'POST', `/h/${endpoint.slug}`, { body: Buffer.from('{}') });
    assert.equal(r.status, 200);
    assert.ok(r.json.request_id);
  });

  test('answers the configured status, headers in order and body, after the capture is stored', async () => {
    const response = { status: 503, headers: { 'Retry-After': '120', 'Content-Type': 'text/plain; charset=utf-8', 'X-Weir-Test': 'é ok' }, body: 'down for maintenance 🦆' };
    const { endpoint } = await setup(response);
    assert.deepEqual(endpoint.response, response);
    const r = await send(h.port, 'POST', `/h/${endpoint.slug}/stripe`, { body: Buffer.from('{"id":"evt_1"}') });
    assert.equal(r.status, 503);
    assert.equal(r.body.toString('utf8'), response.body);
    assert.equal(r.headers['retry-after'], '120');
    assert.equal(r.headers['content-type'], 'text/plain; charset=utf-8');
    assert.equal(r.headers['content-length'], String(Buffer.byteLength(response.body)));
    // the capture was committed before the answer left
    const rows = await storedCaptures(t.db, endpoint.id);
    assert.equal(rows.length, 1);
    assert.equal(rows[0].path, '/stripe');
  });

  test('a PATCH changes the answer of the next capture, and null restores the default', async () => {
    const { s, endpoint } = await setup({ status: 202 });
    let r = await send(h.port, 'POST', `/h/${endpoint.slug}`, { body: Buffer.from('a') });
    assert.equal(r.status, 202);
    assert.equal(r.body.length, 0);
    const patched = await patchEndpoint(s.key, endpoint, { response: { status: 410, body: 'gone' } });
    assert.equal(patched.status, 200);
    assert.deepEqual(patched.json.data.response, { status: 410, headers: {}, body: 'gone' });
    r = await send(h.port, 'POST', `/h/${endpoint.slug}`, { body: Buffer.from('b') });
    assert.equal(r.status, 410);
    assert.equal(r.body.toString(), 'gone');
    const reset = await patchEndpoint(s.key, endpoint, { response: null });
    assert.equal(reset.json.data.response, null);
    r = await send(h.port, 'POST', `/h/${endpoint.slug}`, { body: Buffer.from('c') });
    assert.equal(r.status, 200);
    assert.ok(r.json.request_id);
    assert.equal((await storedCaptures(t.db, endpoint.id)).length, 3);
  });

  test('a 204 answer carries no body and no content-length; 64 KB bodies are accepted', async () => {
    const { endpoint } = await setup({ status: 204, headers: { 'X-A': '1' } });
    const r = await send(h.port, 'POST', `/h/${endpoint.slug}`, { body: Buffer.from('x') });
    assert.equal(r.status, 204);
    assert.equal(r.headers['content-length'], undefined);
    assert.equal(r.headers['x-a'], '1');
    const big = await setup({ status: 200, body: 'x'.repeat(KB64) });
    const rb = await send(h.port, 'POST', `/h/${big.endpoint.slug}`, { body: Buffer.from('x') });
    assert.equal(rb.body.length, KB64);
  });

  test('refusals keep their own answers: paused is 423 whatever the setting', async () => {
    const { s, endpoint } = await setup({ status: 500, body: 'custom' });
    await call(h.api.app, 'PATCH', `/v1/endpoints/${endpoint.id}`, { key: s.key, body: { paused: true } });
    const r = await send(h.port, 'POST', `/h/${endpoint.slug}`, { body: Buffer.from('x') });
    assert.equal(r.status, 423);
  });

  describe('bad settings: 400 bad_request naming the problem, nothing changed', () => {
    const bad: [string, unknown, RegExp][] = [
      ['hop-by-hop Connection', { status: 200, headers: { Connection: 'close' } }, /hop-by-hop/],
      ['hop-by-hop transfer-encoding', { status: 200, headers: { 'transfer-encoding': 'chunked' } }, /hop-by-hop/],
      ['hop-by-hop Keep-Alive', { status: 200, headers: { 'Keep-Alive': 'timeout=5' } }, /hop-by-hop/],
      ['hop-by-hop Upgrade', { status: 200, headers: { Upgrade: 'websocket' } }, /hop-by-hop/],
      ['content-length', { status: 200, headers: { 'Content-Length': '5' } }, /writes it from the body/],
      ['a body over 64 KB', { status: 200, body: 'x'.repeat(KB64 + 1) }, /at most 65536 bytes/],
      ['a body over 64 KB in UTF-8 bytes', { status: 200, body: 'é'.repeat(KB64 / 2 + 1) }, /at most 65536 bytes/],
      ['status 100', { status: 100 }, /200-599/],
      ['status 600', { status: 600 }, /200-599/],
      ['a missing status', { body: 'x' }, /status" is required/],
      ['a body on 204', { status: 204, body: 'x' }, /no body/],
      ['a line break in a value', { status: 200, headers: { 'X-A': 'a\r\nSet-Cookie: x=1' } }, /line break/],
      ['an invalid header name', { status: 200, headers: { 'X A': '1' } }, /not a valid HTTP header name/],
      ['a header twice', { status: 200, headers: { 'X-A': '1', 'x-a': '2' } }, /twice/],
      ['a NUL in the body', { status: 200, body: 'a\u0000b' }, /NUL/],
      ['an unknown property', { status: 200, delay: 5 }, /unknown property "delay"/],
      ['too many headers', { status: 200, headers: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`x-h${i}`, '1'])) }, /at most 50/],
    ];
    for (const [what, response, message] of bad) {
      test(`refuses ${what}`, async () => {
        const s = await seedOrg(t.db);
        const ep = await endpointFor(h.api, s);
        const before = (await t.db.query('select * from endpoints order by id')).rows;
        const created = await call(h.api.app, 'POST', '/v1/endpoints', { key: s.key, body: { name: 'other', response } });
        assert.equal(created.status, 400, JSON.stringify(created.json));
        assert.equal(created.json.error.code, 'bad_request');
        assert.match(created.json.error.message, message);
        const patched = await call(h.api.app, 'PATCH', `/v1/endpoints/${ep.id}`, { key: s.key, body: { name: 'renamed', response } });
        assert.equal(patched.status, 400);
        assert.match(patched.json.error.message, message);
        assert.deepEqual((await t.db.query('select * from endpoints order by id')).rows, before);
      });
    }

    test('refuses mistyped shapes through the schema', async () => {
      const s = await seedOrg(t.db);
      for (const response of ['503', [], { status: '503' }, { status: 200.5 }, { status: 200, headers: { 'X-A': 1 } }, { status: 200, body: 5 }, { status: 200, headers: [] }]) {
        const r = await call(h.api.app, 'POST', '/v1/endpoints', { key: s.key, body: { name: 'x', response } });
        assert.equal(r.status, 400, JSON.stringify(response));
        assert.equal(r.json.error.code, 'bad_request');
      }
      assert.equal((await t.db.query('select count(*)::int as n from endpoints')).rows[0].n, 0);
    });
  });
});
