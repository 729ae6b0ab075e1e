import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { after, before, beforeEach, describe, test } from 'node:test';
import { isUuid } from '../../src/db/ids.ts';
import { call } from '../helpers/app.ts';
import { openTestDb, type TestDb } from '../helpers/db.ts';
import { orgWithEndpoint, rawExchange, send, sha256, startHarness, storedCaptures, type Harness } from './harness.ts';

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

describe('byte-exact bodies', () => {
  const bodies: [string, Buffer, string | undefined][] = [
    ['random binary', randomBytes(64 * 1024), 'application/octet-stream'],
    ['non-UTF-8 text', Buffer.from('caf\xe9 cr\xe8me \xff\xfe', 'latin1'), 'text/plain; charset=iso-8859-1'],
    ['only NUL bytes', Buffer.alloc(100), 'application/x-nul'],
    ['empty', Buffer.alloc(0), undefined],
    ['UTF-8 JSON', Buffer.from(JSON.stringify({ emoji: '🦆', quote: '"\\' }), 'utf8'), 'application/json'],
    ['a form', Buffer.from('a=1&b=%20&c', 'latin1'), 'application/x-www-form-urlencoded'],
  ];
  for (const [what, body, contentType] of bodies) {
    test(`${what}: stored, listed and served back with equal hashes`, async () => {
      const o = await orgWithEndpoint(t.db, h.api);
      const headers: Record<string, string> = contentType ? { 'content-type': contentType } : {};
      const r = await send(h.port, 'POST', `/h/${o.endpoint.slug}`, { headers, body });
      assert.equal(r.status, 200, r.body.toString());
      assert.match(r.headers['content-type'] ?? '', /^application\/json/);
      const id = r.json.request_id;
      assert.ok(isUuid(id));

      const [row] = await storedCaptures(t.db, o.endpoint.id);
      assert.equal(row.id, id);
      assert.equal(sha256(row.body), sha256(body));
      assert.equal(row.body_size, body.length);
      assert.equal(row.content_type, contentType ?? null);

      const raw = await h.api.app.inject({ method: 'GET', url: `/v1/requests/${id}/body`, headers: { authorization: `Bearer ${o.key}` } });
      assert.equal(raw.statusCode, 200);
      assert.equal(sha256(raw.rawPayload), sha256(body));
      assert.equal(raw.headers['content-type'], contentType ?? 'application/octet-stream');

      const full = await call(h.api.app, 'GET', `/v1/requests/${id}`, { key: o.key });
      const decoded = Buffer.from(full.json.data.body, full.json.data.body_encoding === 'base64' ? 'base64' : 'utf8');
      assert.equal(sha256(decoded), sha256(body));
      const utf8 = Buffer.from(body.toString('utf8'), 'utf8').equals(body);
      assert.equal(full.json.data.body_encoding, utf8 ? 'utf8' : 'base64');
    });
  }

  test('a chunked body is stored as the concatenation of its chunks', async () => {
    const o = await orgWithEndpoint(t.db, h.api);
    const req = ['POST /h/' + o.endpoint.slug + ' HTTP/1.1', 'Host: x', 'Transfer-Encoding: chunked', 'Connection: close', '', '3', 'abc', '4', '\u0000\u0001\u00fe\u00ff', '0', '', ''].join('\r\n');
    const r = await rawExchange(h.port, Buffer.from(req, 'latin1'));
    assert.match(r.text, /^HTTP\/1\.1 200 /);
    const [row] = await storedCaptures(t.db, o.endpoint.id);
    assert.deepEqual([...row.body], [0x61, 0x62, 0x63, 0, 1, 0xfe, 0xff]);
  });
});

describe('request line and headers', () => {
  test('headers keep their order, original case and duplicates', async () => {
    const o = await orgWithEndpoint(t.db, h.api);
    const sent: [string, string][] = [
      ['Host', 'example.test'],
      ['X-Dup', 'one'],
      ['x-dup', 'two'],
      ['Set-Cookie', 'a=1'],
      ['set-cookie', 'b=2'],
      ['Content-Type', 'text/plain'],
      ['content-type', 'application/json'],
      ['X-Signature', 't=1,v1=abc'],
      ['X-Latin', 'caf\u00e9'],
      ['Content-Length', '5'],
      ['Connection', 'close'],
    ];
    const req = [`PUT /h/${o.endpoint.slug} HTTP/1.1`, ...sent.map(([n, v]) => `${n}: ${v}`), '', 'hello'].join('\r\n');
    const r = await rawExchange(h.port, Buffer.from(req, 'latin1'));
    assert.match(r.text, /^HTTP\/1\.1 200 /);
    const [row] = await storedCaptures(t.db, o.endpoint.id);
    assert.deepEqual(row.headers, sent);
    assert.equal(row.content_type, 'text/plain', 'the first Content-Type is the one recorded');
    const full = await call(h.api.app, 'GET', `/v1/requests/${row.id}`, { key: o.key });
    assert.deepEqual(full.json.data.headers, sent.map(([name, value]) => ({ name, value })));
  });

  test('every standard method is captured as sent; HEAD gets no body', async () => {
    const o = await orgWithEndpoint(t.db, h.api);
    const methods = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD'];
    for (const m of methods) {
      const r = await send(h.port, m, `/h/${o.endpoint.slug}`);
      assert.equal(r.status, 200, m);
      if (m === 'HEAD') assert.equal(r.body.length, 0);
    }
    assert.deepEqual((await storedCaptures(t.db, o.endpoint.id)).map((c) => c.method), methods);
  });

  test('sub-paths and the raw query string are stored exactly, undecoded', async () => {
    const o = await orgWithEndpoint(t.db, h.api);
    const cases: [string, string, string][] = [
      ['', '', ''],
      ['/', '/', ''],
      ['?', '', ''],
      ['/a/b%20c/?x=1&x=2&y=%ZZ&z', '/a/b%20c/', 'x=1&x=2&y=%ZZ&z'],
      ['/stripe/events?a=b?c=d', '/stripe/events', 'a=b?c=d'],
      ['//double//slash', '//double//slash', ''],
      ['/%2e%2e/etc', '/%2e%2e/etc', ''],
    ];
    for (const [suffix] of cases) assert.equal((await send(h.port, 'POST', `/h/${o.endpoint.slug}${suffix}`)).status, 200, suffix);
    const rows = await storedCaptures(t.db, o.endpoint.id);
    assert.deepEqual(rows.map((r) => [r.path, r.query]), cases.map(([, p, q]) => [p, q]));
  });

  test('the source address is the peer; X-Forwarded-For is ignored without trusted proxies', async () => {
    const o = await orgWithEndpoint(t.db, h.api);
    await send(h.port, 'POST', `/h/${o.endpoint.slug}`, { headers: { 'x-forwarded-for': '203.0.113.9' } });
    const [row] = await storedCaptures(t.db, o.endpoint.id);
    assert.equal(row.source_ip, '127.0.0.1');
  });
});

describe('what is not captured', () => {
  test('paths other than /h/{slug} answer 404 with an error string', async () => {
    const o = await orgWithEndpoint(t.db, h.api);
    for (const path of ['/', '/h', '/h/', '/hooks/' + o.endpoint.slug, '/H/' + o.endpoint.slug, '/h/' + o.endpoint.slug.toUpperCase(), '/h/nosuchslug00000', '/favicon.ico', '/h/bad-slug!']) {
      const r = await send(h.port, 'POST', path, { body: 'x' });
      assert.equal(r.status, 404, path);
      assert.equal(typeof r.json.error, 'string');
    }
    assert.equal((await storedCaptures(t.db, o.endpoint.id)).length, 0);
  });

  test('a paused endpoint answers 423 {error: string} and stores nothing; unpausing accepts again', async () => {
    const o = await orgWithEndpoint(t.db, h.api);
    assert.equal((await send(h.port, 'POST', `/h/${o.endpoint.slug}`)).status, 200);
    await call(h.api.app, 'PATCH', `/v1/endpoints/${o.endpoint.id}`, { key: o.key, body: { paused: true } });
    const r = await send(h.port, 'POST', `/h/${o.endpoint.slug}/x`, { body: 'while paused' });
    assert.equal(r.status, 423);
    assert.deepEqual(r.json, { error: 'endpoint paused' });
    await call(h.api.app, 'PATCH', `/v1/endpoints/${o.endpoint.id}`, { key: o.key, body: { paused: false } });
    assert.equal((await send(h.port, 'POST', `/h/${o.endpoint.slug}`)).status, 200);
    assert.equal((await storedCaptures(t.db, o.endpoint.id)).length, 2);
  });

  test('a deleted endpoint answers 404 at once', async () => {
    const o = await orgWithEndpoint(t.db, h.api);
    assert.equal((await send(h.port, 'POST', `/h/${o.endpoint.slug}`)).status, 200);
    assert.equal((await call(h.api.app, 'DELETE', `/v1/endpoints/${o.endpoint.id}`, { key: o.key })).status, 204);
    const r = await send(h.port, 'POST', `/h/${o.endpoint.slug}`);
    assert.equal(r.status, 404);
    assert.equal(typeof r.json.error, 'string');
  });
});

test('300 concurrent captures are all acknowledged and listed exactly once, newest first', async () => {
  const o = await orgWithEndpoint(t.db, h.api);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 100 });
  try {
    const answers = await Promise.all(
      Array.from({ length: 300 }, (_, i) => send(h.port, 'POST', `/h/${o.endpoint.slug}/n/${i}`, { body: `{"n":${i}}`, agent, headers: { 'content-type': 'application/json' } })),
    );
    assert.deepEqual([...new Set(answers.map((a) => a.status))], [200]);
    const acked = new Set(answers.map((a) => a.json.request_id));
    assert.equal(acked.size, 300);

    const seen: string[] = [];
    let before: string | null = null;
    for (;;) {
      const page: any = await call(h.api.app, 'GET', `/v1/endpoints/${o.endpoint.id}/requests?limit=100${before ? `&before=${before}` : ''}`, { key: o.key });
      assert.equal(page.status, 200);
      seen.push(...page.json.data.data.map((r: any) => r.id));
      assert.equal(page.json.data.meta.count, page.json.data.data.length);
      if (!page.json.data.meta.has_more) {
        assert.equal(page.json.data.meta.next_cursor, null);
        break;
      }
      before = page.json.data.meta.next_cursor;
    }
    assert.equal(seen.length, 300);
    assert.deepEqual(new Set(seen), acked);
    assert.deepEqual(seen, [...seen].sort().reverse(), 'newest first');
  } finally {
    agent.destroy();
  }
});
