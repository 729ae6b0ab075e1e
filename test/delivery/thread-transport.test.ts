/**
 * The HTTPS transport on a thread of its own (src/delivery/thread-transport.ts,
 * WEIR_FORWARD_THREAD), against real HTTPS servers on loopback: what only
 * the thread adds to HttpTransport. Every edge of an exchange runs on both
 * transports in http-transport.test.ts; here: which transport a node gets,
 * many requests of one batch answered each with its own result, bodies that
 * cross the thread byte for byte (binary, empty, 5 MiB), a thread that dies
 * with forwards in flight, and a closed transport.
 */
import assert from 'node:assert/strict';
import { randomBytes, createHash } from 'node:crypto';
import { after, describe, it } from 'node:test';
import { loadConfig } from '../../src/config.ts';
import { HttpTransport } from '../../src/delivery/http-transport.ts';
import type { Resolver } from '../../src/delivery/ssrf.ts';
import { forwardTransport } from '../../src/delivery/start.ts';
import { ThreadedHttpTransport } from '../../src/delivery/thread-transport.ts';
import { startReceiver, testCa, type ReceiverOptions } from '../helpers/https.ts';
import { claimedDelivery } from './helpers.ts';

async function serve(reply?: ReceiverOptions['reply']) {
  const receiver = await startReceiver({ reply });
  after(() => receiver.close());
  return receiver;
}

function threaded(opts: { timeoutMs?: number; responseBodyCap?: number } = {}): ThreadedHttpTransport {
  const t = new ThreadedHttpTransport({ allowPrivate: true, connectTimeoutMs: 5_000, timeoutMs: 10_000, ca: testCa().ca, ...opts });
  after(() => t.close());
  return t;
}

function delivery(url: string, body: Buffer, headers: Array<[string, string]> = [['content-type', 'application/octet-stream']]) {
  const d = claimedDelivery(url);
  return { ...d, capture: { ...d.capture!, headers, body } };
}

const live = () => new AbortController().signal;

describe('which HTTPS transport a node forwards with (WEIR_FORWARD_THREAD)', () => {
  const opts = { allowPrivate: true, connectTimeoutMs: 1_000, timeoutMs: 1_000 };
  const kind = (db: 'pglite' | 'postgres', env: Record<string, string>, resolver?: Resolver) => {
    const t = forwardTransport({ kind: db }, loadConfig(env), { ...opts, ...(resolver && { resolver }) });
    after(() => t.close());
    return t instanceof ThreadedHttpTransport ? 'thread' : t instanceof HttpTransport ? 'main' : 'other';
  };
  it('auto: a thread of its own on PGlite, the main thread on PostgreSQL', () => {
    assert.equal(kind('pglite', {}), 'thread');
    assert.equal(kind('postgres', {}), 'main');
  });
  it('on and off decide on either database', () => {
    assert.equal(kind('postgres', { WEIR_FORWARD_THREAD: 'on' }), 'thread');
    assert.equal(kind('pglite', { WEIR_FORWARD_THREAD: 'off' }), 'main');
  });
  it('an injected resolver (a function: it cannot cross to a thread) keeps the transport in this thread', () => {
    assert.equal(kind('pglite', { WEIR_FORWARD_THREAD: 'on' }, async () => [{ address: '127.0.0.1', family: 4 }]), 'main');
  });
});

describe('the HTTPS transport on a thread of its own', () => {
  it('answers each of many requests sent in one turn with its own result', async () => {
    // the answer names the request: its body, reversed, with a status of its own (200-202: a 204 has no body)
    const server = await serve((req) => ({
      status: 200 + (req.body[0] % 3),
      headers: { 'x-got': String(req.body.length), 'content-type': 'application/octet-stream' },
      body: Buffer.from(req.body).reverse(),
    }));
    const t = threaded();
    const bodies = Array.from({ length: 200 }, (_, i) => Buffer.concat([Buffer.from([i % 251]), randomBytes(i * 13)]));
    const target = `${server.url}/hook`;
    const results = await Promise.all(bodies.map((b) => t.send(delivery(target, b), live())));
    results.forEach((r, i) => {
      assert.equal(r.statusCode, 200 + (bodies[i][0] % 3), `request ${i}`);
      assert.deepEqual(r.responseBody, Buffer.from(bodies[i]).reverse(), `request ${i}'s answer`);
      assert.ok(Buffer.isBuffer(r.responseBody));
      assert.deepEqual(r.responseHeaders!.find(([n]) => n === 'x-got'), ['x-got', String(bodies[i].length)]);
      assert.equal(r.url, target);
      assert.ok(r.startedAt instanceof Date);
    });
    assert.equal(server.received.length, 200);
  });

  it('sends bodies byte for byte: binary, empty and 5 MiB, with the headers in order and case', async () => {
    const server = await serve();
    const t = threaded();
    const binary = Buffer.from([0x00, 0xff, 0x5c, 0x78, 0x0d, 0x0a, 0x00]);
    const big = randomBytes(5 * 1024 * 1024);
    for (const body of [binary, Buffer.alloc(0), big]) {
      const r = await t.send(delivery(server.url, body, [['X-Mixed-Case', 'a'], ['content-type', 'application/octet-stream'], ['x-mixed-case', 'b']]), live());
      assert.equal(r.statusCode, 200);
      const got = server.received.at(-1)!;
      assert.equal(got.body.length, body.length);
      assert.equal(createHash('sha256').update(got.body).digest('hex'), createHash('sha256').update(body).digest('hex'));
      const names = got.rawHeaders.filter((_, i) => i % 2 === 0);
      assert.deepEqual(names.filter((n) => n.toLowerCase() === 'x-mixed-case'), ['X-Mixed-Case', 'x-mixed-case']);
    }
  });

  it('keeps the answer cap: a large answer comes back cut at the cap, marked truncated', async () => {
    const server = await serve(() => ({ body: Buffer.alloc(200_000, 7) }));
    const r = await threaded({ responseBodyCap: 4096 }).send(delivery(server.url, Buffer.from('x')), live());
    assert.equal(r.statusCode, 200);
    assert.equal(r.responseBody!.length, 4096);
    assert.equal(r.responseTruncated, true);
  });

  it('a thread that dies with forwards in flight: each ends as a network error, and the next send starts a new thread', async () => {
    // the first five requests are never answered
    const server = await serve((_req, index) => (index < 5 ? 'hang' : {}));
    const t = threaded({ timeoutMs: 30_000 });
    const stuck = Array.from({ length: 5 }, () => t.send(delivery(server.url, Buffer.from('a')), live()));
    await server.waitFor(5);
    assert.equal(t.running, true);
    // as a crash of the thread would (an out-of-memory end, a fault in native code)
    await (t as unknown as { thread: { terminate(): Promise<number> } }).thread.terminate();
    for (const r of await Promise.all(stuck)) {
      assert.equal(r.statusCode, undefined);
      assert.equal(r.errorClass, 'network_error');
      assert.match(r.errorMessage!, /forwarding thread stopped/);
    }
    const again = await t.send(delivery(server.url, Buffer.from('b')), live());
    assert.equal(again.statusCode, 200);
    assert.equal(t.running, true);
  });

  it('a signal aborted before its first send reaches the thread: nothing is sent', async () => {
    const server = await serve();
    const t = threaded();
    // a thread already running, so the abort and the send cross in one turn
    assert.equal((await t.send(delivery(server.url, Buffer.from('warm')), live())).statusCode, 200);
    const stop = new AbortController();
    const pending = t.send(delivery(server.url, Buffer.from('late')), stop.signal);
    stop.abort();
    const r = await pending;
    assert.equal(r.statusCode, undefined);
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(server.received.length, 1);
  });

  it('once closed, the thread is gone and a send ends at once as an error', async () => {
    const server = await serve();
    const t = threaded();
    assert.equal((await t.send(delivery(server.url, Buffer.from('a')), live())).statusCode, 200);
    await t.close();
    assert.equal(t.running, false);
    const r = await t.send(delivery(server.url, Buffer.from('b')), live());
    assert.equal(r.errorClass, 'network_error');
    assert.match(r.errorMessage!, /closed/);
    assert.equal(server.received.length, 1);
  });
});

describe("the thread's own queue (queueLimit, sendQueued)", () => {
  const later = () => Date.now() + 60_000;
  /** A receiver that holds each request until release(i) (i in arrival order), and the bodies in arrival order. */
  async function gated() {
    const gates: Array<() => void> = [];
    const opened = new Map<number, Promise<void>>();
    const gate = (i: number) => {
      if (!opened.has(i)) opened.set(i, new Promise<void>((resolve) => (gates[i] = resolve)));
      return opened.get(i)!;
    };
    const server = await serve((_req, index) => ({ until: gate(index) }));
    return { server, release: (i: number) => (gate(i), gates[i]()), bodies: () => server.received.map((r) => r.body.toString()) };
  }
  const queued = (limit: number) => {
    const t = new ThreadedHttpTransport({ allowPrivate: true, connectTimeoutMs: 5_000, timeoutMs: 30_000, ca: testCa().ca, queueLimit: limit });
    after(() => t.close());
    return t;
  };
  const settle = () => new Promise((r) => setTimeout(r, 200));

  it('runs at most its limit at once, and starts the waiting ones in arrival order as answers come in', async () => {
    const { server, release, bodies } = await gated();
    const t = queued(2);
    assert.equal(t.queueLimit, 2);
    const sent = ['a', 'b', 'c', 'd', 'e'].map((b) => t.sendQueued(delivery(server.url, Buffer.from(b)), live(), later()));
    await server.waitFor(2);
    await settle();
    assert.deepEqual(bodies(), ['a', 'b']);
    release(1);
    await server.waitFor(3);
    await settle();
    assert.deepEqual(bodies(), ['a', 'b', 'c']);
    for (let i = 0; i < 5; i++) release(i);
    for (const r of await Promise.all(sent)) assert.equal(r?.statusCode, 200);
    assert.deepEqual(bodies(), ['a', 'b', 'c', 'd', 'e']);
  });

  it('a waiting request whose startBy passes is answered as not started and never sent; the next one still is', async () => {
    const { server, release, bodies } = await gated();
    const t = queued(1);
    const first = t.sendQueued(delivery(server.url, Buffer.from('first')), live(), later());
    const expiring = t.sendQueued(delivery(server.url, Buffer.from('expiring')), live(), Date.now() + 100);
    const next = t.sendQueued(delivery(server.url, Buffer.from('next')), live(), later());
    await server.waitFor(1);
    await new Promise((r) => setTimeout(r, 300));
    release(0);
    assert.equal((await first)?.statusCode, 200);
    assert.equal(await expiring, null);
    await server.waitFor(2);
    release(1);
    assert.equal((await next)?.statusCode, 200);
    assert.deepEqual(bodies(), ['first', 'next']);
  });

  it('an aborted signal answers its waiting requests at once as not started, and sends none of them', async () => {
    const { server, release, bodies } = await gated();
    const t = queued(1);
    const first = t.sendQueued(delivery(server.url, Buffer.from('first')), live(), later());
    const stop = new AbortController();
    const waiting = ['x', 'y'].map((b) => t.sendQueued(delivery(server.url, Buffer.from(b)), stop.signal, later()));
    await server.waitFor(1);
    stop.abort();
    // answered while the first still holds the one attempt
    assert.deepEqual(await Promise.all(waiting), [null, null]);
    release(0);
    assert.equal((await first)?.statusCode, 200);
    await settle();
    assert.deepEqual(bodies(), ['first']);
  });

  it('send() without a startBy waits its turn like any other, and is never answered as not started, even aborted while it waits', async () => {
    const { server, release, bodies } = await gated();
    const t = queued(1);
    const first = t.sendQueued(delivery(server.url, Buffer.from('first')), live(), later());
    const plain = t.send(delivery(server.url, Buffer.from('plain')), live());
    const stop = new AbortController();
    const aborted = t.send(delivery(server.url, Buffer.from('aborted')), stop.signal);
    await server.waitFor(1);
    stop.abort();
    await new Promise((r) => setTimeout(r, 300));
    release(0);
    await server.waitFor(2);
    release(1);
    assert.equal((await first)?.statusCode, 200);
    assert.equal((await plain).statusCode, 200);
    // answered by the transport as an aborted attempt, a result like any other
    const gone = await aborted;
    assert.notEqual(gone, null);
    assert.equal(gone.statusCode, undefined);
    assert.ok(gone.errorClass);
    await settle();
    assert.deepEqual(bodies(), ['first', 'plain']);
  });

  it('a node gets the queue at its concurrency (WEIR_DELIVERY_CONCURRENCY) on the thread, none on the main thread', () => {
    const opts = { allowPrivate: true, connectTimeoutMs: 1_000, timeoutMs: 1_000 };
    const onThread = forwardTransport({ kind: 'pglite' }, loadConfig({ WEIR_DELIVERY_CONCURRENCY: '7' }), opts);
    const onMain = forwardTransport({ kind: 'postgres' }, loadConfig({ WEIR_DELIVERY_CONCURRENCY: '7' }), opts);
    after(() => Promise.all([onThread.close(), onMain.close()]));
    assert.equal(onThread.queueLimit, 7);
    assert.equal(onMain.queueLimit, undefined);
  });
});
