import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { seedOrg } from '../helpers/app.ts';
import { openTestDb, type TestDb } from '../helpers/db.ts';
import { buildProbeApp, probeModule } from '../helpers/probe-app.ts';
import { freshStore, startWeirProcess } from '../helpers/weir-process.ts';
import { assertErrorEnvelope } from './envelope.ts';

// Graceful shutdown: a node told to stop finishes the requests it has
// accepted, refuses new ones in the envelope, and only then exits.

let tdb: TestDb;

before(async () => {
  tdb = await openTestDb();
});

after(async () => {
  await tdb.close();
});

/** A raw HTTP/1.1 connection: write bytes, read everything until the server closes it. */
async function rawConnection(port: number): Promise<{ write(s: string): void; answer: Promise<string> }> {
  const socket = net.connect(port, '127.0.0.1');
  await new Promise((r) => socket.once('connect', r));
  let data = '';
  socket.on('data', (d) => (data += d));
  const answer = new Promise<string>((resolve) => socket.once('close', () => resolve(data)));
  return { write: (s) => socket.write(s), answer };
}

describe('closing the app', () => {
  it('finishes in-flight requests, refuses ones that arrive meanwhile with 503 service_unavailable, then closes', async () => {
    let entered!: () => void;
    const inHandler = new Promise<void>((r) => (entered = r));
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    const p = await buildProbeApp(tdb.db, [
      probeModule([
        {
          method: 'GET',
          path: '/test-shutdown/slow',
          auth: { anyKey: true },
          handler: async () => {
            entered();
            await released;
            return { data: { finished: true } };
          },
        },
      ]),
    ]);
    const { key } = await seedOrg(tdb.db);
    await p.app.listen({ port: 0, host: '127.0.0.1' });
    const port = (p.app.server.address() as net.AddressInfo).port;

    const slow = await rawConnection(port);
    slow.write(`GET /v1/test-shutdown/slow HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\n\r\n`);
    // A request whose headers are still arriving when shutdown starts.
    const late = await rawConnection(port);
    late.write('GET /v1/me HTTP/1.1\r\nHost: x\r\n');
    await inHandler;

    let closed = false;
    const closing = p.close().then(() => (closed = true));
    await assert.rejects(fetch(`http://127.0.0.1:${port}/v1/me`, { headers: { authorization: `Bearer ${key}` } }), 'no new connections');

    late.write(`Authorization: Bearer ${key}\r\n\r\n`);
    const lateAnswer = await late.answer;
    assert.match(lateAnswer, /^HTTP\/1\.1 503 /);
    assert.match(lateAnswer, /connection: close/i);
    assertErrorEnvelope({ status: 503, json: JSON.parse(lateAnswer.slice(lateAnswer.indexOf('\r\n\r\n') + 4)) }, 503, 'service_unavailable');
    // the shutdown has refused a connection and answered a late request: it is well under way, and still waits
    assert.equal(closed, false, 'close waits for the in-flight request');

    release();
    const slowAnswer = await slow.answer;
    assert.match(slowAnswer, /^HTTP\/1\.1 200 /);
    assert.match(slowAnswer, /connection: close/i, 'the kept-alive connection is closed after the answer');
    assert.match(slowAnswer, /\{"data":\{"finished":true\}\}/);
    await closing;
    assert.equal(closed, true);
  });
});

describe('weir serve on SIGTERM', () => {
  it('drains a request whose body is still arriving, answers it, and exits 0', async (t) => {
    const store = await freshStore();
    t.after(() => store.drop());
    const weir = await startWeirProcess({ ...store.env, WEIR_LOG_LEVEL: 'info' });
    t.after(() => weir.stop('SIGKILL'));
    const key = weir.bootstrapKey!;
    assert.ok(key);

    const body = JSON.stringify({ name: 'created during shutdown' });
    const socket = net.connect(weir.apiPort, '127.0.0.1');
    await new Promise((r) => socket.once('connect', r));
    let answer = '';
    socket.on('data', (d) => (answer += d));
    const ended = new Promise((r) => socket.once('close', r));
    socket.write(
      `POST /v1/api-keys HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n` +
        body.slice(0, 5),
    );
    // Fastify logs the request once its headers are in: the request is in flight
    await waitFor(() => /"url":"\/v1\/api-keys"[^\n]*"msg":"incoming request"/.test(weir.stdout()), 'the request to be in flight');

    const exit = new Promise<number | null>((r) => weir.child.once('exit', (code) => r(code)));
    weir.child.kill('SIGTERM');
    await waitFor(() => weir.stdout().includes('shutting down: draining in-flight requests'), 'the shutdown to start');
    // No event says "has not exited": the proof is the 201 below, which an
    // exit before the body's end could not have sent.
    assert.equal(weir.child.exitCode, null, 'still running while a request is in flight');

    socket.write(body.slice(5));
    await ended;
    assert.match(answer, /^HTTP\/1\.1 201 /, answer);
    assert.match(answer, /"key":"wr_live_/);
    assert.equal(await exit, 0, weir.stdout() + weir.stderr());
    assert.match(weir.stdout(), /shutting down: draining in-flight requests/);
  });
});

async function waitFor(cond: () => boolean, what: string, timeoutMs = 30_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
