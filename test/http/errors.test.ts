import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import { Writable } from 'node:stream';
import { call, seedOrg } from '../helpers/app.ts';
import { openTestDb, type TestDb } from '../helpers/db.ts';
import { buildProbeApp, probeModule, type ProbeApp } from '../helpers/probe-app.ts';
import { assertErrorEnvelope, assertNoInternals } from './envelope.ts';

// Every error a client can cause, and one nobody expected, answered in the
// specification's envelope: {error: {code, message}}, never a stack or SQL.

let tdb: TestDb;
let p: ProbeApp;
let key: string;
const logLines: any[] = [];

before(async () => {
  tdb = await openTestDb();
  const sink = new Writable({
    write(chunk, _enc, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) logLines.push(JSON.parse(line));
      done();
    },
  });
  p = await buildProbeApp(
    tdb.db,
    [
      probeModule([
        {
          method: 'GET',
          path: '/test-errors/throws',
          auth: { anyKey: true },
          handler: async () => {
            throw new Error('boom at secret_function (/srv/weir/src/x.ts:12:34)');
          },
        },
        {
          method: 'GET',
          path: '/test-errors/sql',
          auth: { anyKey: true },
          handler: async () => tdb.db.query('select secret_column from no_such_table where x = 1'),
        },
        {
          method: 'GET',
          path: '/test-errors/status-400',
          auth: { anyKey: true },
          handler: async () => {
            throw Object.assign(new Error('internal detail from a library: select 1 from t where a'), { statusCode: 400 });
          },
        },
      ]),
    ],
    pino({ level: 'info' }, sink),
  );
  key = (await seedOrg(tdb.db)).key;
});

after(async () => {
  await p.close();
  await tdb.close();
});

describe('malformed bodies', () => {
  it('answers malformed JSON with 400 bad_request', async () => {
    const res = await call(p.app, 'POST', '/v1/api-keys', { key, body: '{"name": "x",' });
    assertErrorEnvelope(res, 400, 'bad_request');
    assert.match(res.json.error.message, /not valid JSON/);
  });

  it('answers a non-JSON content type with 400 bad_request', async () => {
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/xml']) {
      const res = await call(p.app, 'POST', '/v1/api-keys', { key, body: 'name=x', headers: { 'content-type': type } });
      assertErrorEnvelope(res, 400, 'bad_request');
      assert.match(res.json.error.message, /Content-Type must be application\/json/);
    }
  });

  it('answers a body sent without a content type with 400 bad_request', async () => {
    const res = await p.app.inject({ method: 'POST', url: '/v1/api-keys', headers: { authorization: `Bearer ${key}` }, payload: Buffer.from('{"name":"x"}') });
    assertErrorEnvelope({ status: res.statusCode, json: res.json() }, 400, 'bad_request');
  });

  it('answers an empty or missing body on a route that needs one with 400 bad_request', async () => {
    const empty = await call(p.app, 'POST', '/v1/api-keys', { key, body: '' });
    assertErrorEnvelope(empty, 400, 'bad_request');
    assert.match(empty.json.error.message, /JSON object/);
    const none = await call(p.app, 'POST', '/v1/api-keys', { key });
    assertErrorEnvelope(none, 400, 'bad_request');
  });

  it('answers JSON that is not an object with 400 bad_request', async () => {
    for (const body of ['null', '[]', '"name"', '42', 'true']) {
      const res = await call(p.app, 'POST', '/v1/api-keys', { key, body });
      assertErrorEnvelope(res, 400, 'bad_request');
    }
  });

  it('answers an unknown field with 400 naming the field', async () => {
    const res = await call(p.app, 'POST', '/v1/api-keys', { key, body: { name: 'x', nmae: 'typo' } });
    assertErrorEnvelope(res, 400, 'bad_request');
    assert.match(res.json.error.message, /"nmae" is not allowed/);
  });

  it('answers a wrongly typed field with 400 naming the field, without coercing it', async () => {
    for (const [body, field] of [
      [{ name: 5 }, 'name'],
      [{ name: 'x', scopes: 'endpoints:read' }, 'scopes'],
      [{ name: 'x', access_mode: 'everything' }, 'access_mode'],
      [{ email: 'a@b.co', role: 'admin', active: 'yes' }, 'active'],
    ] as const) {
      const url = 'email' in body ? '/v1/members' : '/v1/api-keys';
      const res = await call(p.app, 'POST', url, { key, body });
      assertErrorEnvelope(res, 400, 'bad_request');
      assert.match(res.json.error.message, new RegExp(`"${field}"`));
    }
  });

  it('answers a body over 1 MiB with 413 payload_too_large', async () => {
    const big = JSON.stringify({ name: 'x'.repeat(1024 * 1024 + 10) });
    const res = await call(p.app, 'POST', '/v1/api-keys', { key, body: big });
    assertErrorEnvelope(res, 413, 'payload_too_large');
  });

  it('accepts application/json with a charset and +json media types', async () => {
    for (const type of ['application/json; charset=utf-8', 'application/merge-patch+json']) {
      const res = await call(p.app, 'POST', '/v1/api-keys', { key, body: JSON.stringify({ name: 'ok' }), headers: { 'content-type': type } });
      assert.equal(res.status, 201, JSON.stringify(res.json));
    }
  });
});

describe('unknown routes and bad requests', () => {
  it('answers unknown routes with 404 not_found, under /v1 and elsewhere', async () => {
    for (const [method, url] of [
      ['GET', '/v1/nope'],
      ['GET', '/nope'],
      ['POST', '/v1/me'],
      ['DELETE', '/v1/health'],
      ['GET', '/admin/v1/nope'],
    ] as const) {
      const res = await call(p.app, method as 'GET', url, { key });
      assertErrorEnvelope(res, 404, 'not_found');
    }
  });

  it('answers a malformed URL with 400 bad_request', async () => {
    const res = await call(p.app, 'GET', '/v1/%zz', { key });
    assertErrorEnvelope(res, 400, 'bad_request');
  });

  it('answers a request Node cannot parse (bad Content-Length) with a 400 envelope', async () => {
    await p.app.listen({ port: 0, host: '127.0.0.1' });
    const port = (p.app.server.address() as net.AddressInfo).port;
    const raw = await new Promise<string>((resolve, reject) => {
      const s = net.connect(port, '127.0.0.1', () => {
        s.write(`POST /v1/api-keys HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: abc\r\n\r\n{}`);
      });
      let data = '';
      s.on('data', (d) => (data += d));
      s.on('end', () => resolve(data));
      s.on('error', reject);
    });
    assert.match(raw, /^HTTP\/1\.1 400 /);
    const body = JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4));
    assert.deepEqual(body, { error: { code: 'bad_request', message: 'The request is not valid HTTP.' } });
  });
});

describe('unexpected errors', () => {
  it('answers an unexpected exception with 500 internal_error quoting the request id, and no stack', async () => {
    const res = await call(p.app, 'GET', '/test-errors/throws'.replace(/^/, '/v1'), { key, headers: { 'x-request-id': 'req-abc-123' } });
    assertErrorEnvelope(res, 500, 'internal_error');
    assert.match(res.json.error.message, /req-abc-123/);
    assert.doesNotMatch(res.json.error.message, /boom|secret_function/);
  });

  it('answers a database error with 500 and no SQL text', async () => {
    const res = await call(p.app, 'GET', '/v1/test-errors/sql', { key });
    assertErrorEnvelope(res, 500, 'internal_error');
    assert.doesNotMatch(JSON.stringify(res.json), /no_such_table|secret_column/);
  });

  it('does not trust the status or message of an error that is not ours or Fastify’s', async () => {
    const res = await call(p.app, 'GET', '/v1/test-errors/status-400', { key });
    assertErrorEnvelope(res, 500, 'internal_error');
  });

  it('logs the failure with the request id, for the operator', async () => {
    await call(p.app, 'GET', '/v1/test-errors/sql', { key, headers: { 'x-request-id': 'trace-me-42' } });
    const line = logLines.find((l) => l.reqId === 'trace-me-42' && l.msg === 'unhandled error');
    assert.ok(line, 'an error line carries reqId');
    assert.match(JSON.stringify(line.err), /no_such_table/);
  });
});

describe('request ids', () => {
  it('echoes a well-formed x-request-id and makes one up otherwise', async () => {
    const given = await call(p.app, 'GET', '/v1/me', { key, headers: { 'x-request-id': 'abc.DEF-1' } });
    assert.equal(given.res.headers['x-request-id'], 'abc.DEF-1');
    const bad = await call(p.app, 'GET', '/v1/me', { key, headers: { 'x-request-id': 'has spaces\nand newline' } });
    assert.match(String(bad.res.headers['x-request-id']), /^[0-9a-f-]{36}$/);
    const none = await call(p.app, 'GET', '/v1/nope');
    assert.match(String(none.res.headers['x-request-id']), /^[0-9a-f-]{36}$/);
  });

  it('logs every request with its request id', async () => {
    await call(p.app, 'GET', '/v1/me', { key, headers: { 'x-request-id': 'logged-req-7' } });
    assert.ok(logLines.some((l) => l.reqId === 'logged-req-7' && l.res?.statusCode === 200));
    assertNoInternals(JSON.stringify(logLines.filter((l) => l.reqId === 'logged-req-7').map((l) => l.msg)));
  });
});
