import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { after, before, beforeEach, test } from 'node:test';
import { openTestDb, type TestDb } from '../helpers/db.ts';
import { orgWithEndpoint, rawExchange, send, sha256, startHarness, storedCaptures, type Harness } from './harness.ts';

const LIMIT = 64 * 1024;
let t: TestDb;
let dflt: Harness;
let small: Harness;

before(async () => {
  t = await openTestDb();
  dflt = await startHarness(t.db);
  small = await startHarness(t.db, { maxBodyBytes: LIMIT }, { headersTimeoutMs: 500, requestTimeoutMs: 1_000 });
});
beforeEach(() => t.reset());
after(async () => {
  await small.close();
  await dflt.close();
  await t.close();
});

test('with the default 10 MiB limit, a 1 MiB body is accepted byte-exact', async () => {
  const o = await orgWithEndpoint(t.db, dflt.api);
  const body = randomBytes(1024 * 1024);
  const r = await send(dflt.port, 'POST', `/h/${o.endpoint.slug}`, { body });
  assert.equal(r.status, 200);
  const [row] = await storedCaptures(t.db, o.endpoint.id);
  assert.equal(sha256(row.body), sha256(body));
});

test('a declared Content-Length over the default limit is refused with 413 before any body is sent', async () => {
  const o = await orgWithEndpoint(t.db, dflt.api);
  const head = `POST /h/${o.endpoint.slug} HTTP/1.1\r\nHost: x\r\nContent-Length: ${10 * 1024 * 1024 + 1}\r\n\r\n`;
  const r = await rawExchange(dflt.port, head, { until: /\r\n\r\n.*\}/s });
  assert.match(r.text, /^HTTP\/1\.1 413 /);
  assert.match(r.text, /"error":"body larger than 10485760 bytes"/);
});

test('exactly the limit is accepted; one byte more is 413 and stores nothing', async () => {
  const o = await orgWithEndpoint(t.db, small.api);
  assert.equal((await send(small.port, 'POST', `/h/${o.endpoint.slug}`, { body: Buffer.alloc(LIMIT, 1) })).status, 200);
  const over = await send(small.port, 'POST', `/h/${o.endpoint.slug}`, { body: Buffer.alloc(LIMIT + 1, 2) });
  assert.equal(over.status, 413);
  assert.equal(typeof over.json.error, 'string');
  const rows = await storedCaptures(t.db, o.endpoint.id);
  assert.deepEqual(rows.map((r) => r.body_size), [LIMIT]);
});

test('a chunked body growing past the limit is cut off with 413 while it streams', async () => {
  const o = await orgWithEndpoint(t.db, small.api);
  // The answer arrives while we are still sending; the socket may then fail
  // our writes (EPIPE/ECONNRESET), which is fine once the 413 was read.
  const status = await new Promise<number>((resolve) => {
    let answered = 0;
    const req = http.request({ host: '127.0.0.1', port: small.port, method: 'POST', path: `/h/${o.endpoint.slug}`, agent: false }, (res) => {
      answered = res.statusCode ?? 0;
      res.resume();
      resolve(answered);
    });
    req.on('error', () => resolve(answered));
    let sent = 0;
    const pump = () => {
      while (sent < 50 * LIMIT) {
        sent += 16 * 1024;
        if (!req.write(Buffer.alloc(16 * 1024, 7))) return req.once('drain', pump);
      }
      req.end();
    };
    pump();
  });
  assert.equal(status, 413);
  assert.equal((await storedCaptures(t.db, o.endpoint.id)).length, 0);
  assert.equal((await send(small.port, 'POST', `/h/${o.endpoint.slug}`, { body: 'still fine' })).status, 200);
});

test('Expect: 100-continue gets 413 without a 100 when too large, and 100 Continue otherwise', async () => {
  const o = await orgWithEndpoint(t.db, small.api);
  const big = await rawExchange(small.port, `POST /h/${o.endpoint.slug} HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: ${LIMIT + 1}\r\n\r\n`, { until: /\}$/ });
  assert.match(big.text, /^HTTP\/1\.1 413 /);
  const ok = await rawExchange(small.port, `POST /h/${o.endpoint.slug} HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi`, { until: /request_id/ });
  assert.match(ok.text, /^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200 /);
});

test('a client that never finishes its headers is disconnected while others are served', async () => {
  const o = await orgWithEndpoint(t.db, small.api);
  const slow = rawExchange(small.port, `POST /h/${o.endpoint.slug} HTTP/1.1\r\nHost: x\r\nX-Slow: `, { timeoutMs: 10_000 });
  const meanwhile = await send(small.port, 'POST', `/h/${o.endpoint.slug}`, { body: 'fast' });
  assert.equal(meanwhile.status, 200);
  const r = await slow;
  assert.equal(r.closed, true, 'the server closed the slow connection');
  assert.match(r.text, /^(HTTP\/1\.1 408 |$)/);
});

test('a body that stops arriving is timed out and nothing is stored', async () => {
  const o = await orgWithEndpoint(t.db, small.api);
  const r = await rawExchange(small.port, `POST /h/${o.endpoint.slug} HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nonly ten..`, { timeoutMs: 10_000 });
  assert.equal(r.closed, true);
  assert.equal((await storedCaptures(t.db, o.endpoint.id)).length, 0);
  assert.equal((await send(small.port, 'POST', `/h/${o.endpoint.slug}`, { body: 'next' })).status, 200);
});

test('malformed HTTP gets a 400 and the listener keeps serving', async () => {
  const o = await orgWithEndpoint(t.db, small.api);
  const r = await rawExchange(small.port, 'THIS IS NOT HTTP\r\n\r\n');
  assert.match(r.text, /^HTTP\/1\.1 400 /);
  assert.equal((await send(small.port, 'POST', `/h/${o.endpoint.slug}`)).status, 200);
});
