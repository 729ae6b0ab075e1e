/**
 * The HTTPS transport's own exchange (src/delivery/http-transport.ts), end
 * to end against real HTTPS servers on loopback: how an answer is read (its
 * final head, its body up to the cap), and how an attempt ends early (the
 * total timeout, a connection cut mid-answer, the worker stopping). The
 * worker-level tests (failure-modes, forwarding) see the same through the
 * recorded attempts; these look at each edge of the exchange directly.
 */
import assert from 'node:assert/strict';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { after, describe, it } from 'node:test';
import { ThreadedHttpTransport } from '../../src/delivery/thread-transport.ts';
import type { Transport } from '../../src/delivery/transport.ts';
import { testCa, unacceptedPort } from '../helpers/https.ts';
import { claimedDelivery as delivery, testTransport } from './helpers.ts';

const CAP = 1024;

interface Server {
  url: string;
  /** Requests whose head reached the server. */
  heads: number;
  close(): Promise<void>;
}

async function serve(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<Server> {
  const tls = testCa();
  const sockets = new Set<import('node:net').Socket>();
  const s: Server = { url: '', heads: 0, close: async () => {} };
  const server = https.createServer({ key: tls.key, cert: tls.cert }, (req, res) => {
    s.heads++;
    handler(req, res);
  });
  server.on('secureConnection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  s.url = `https://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  s.close = () =>
    new Promise<void>((resolve) => {
      for (const socket of sockets) socket.destroy();
      server.close(() => resolve());
    });
  return s;
}

type Knobs = { timeoutMs?: number; connectTimeoutMs?: number };

/** Every test runs on both: the transport in this thread, and the same on a thread of its own (WEIR_FORWARD_THREAD). */
const TRANSPORTS: Array<{ where: string; make: (opts: Knobs) => Transport }> = [
  { where: 'in this thread', make: (opts) => testTransport({ ...opts, responseBodyCap: CAP }) },
  {
    where: 'on a thread of its own',
    make: (opts) => new ThreadedHttpTransport({ allowPrivate: true, connectTimeoutMs: 5_000, timeoutMs: 10_000, ca: testCa().ca, ...opts, responseBodyCap: CAP }),
  },
];

for (const { where, make } of TRANSPORTS) {
  function transport(opts: Knobs = {}): Transport {
    const t = make(opts);
    after(() => t.close());
    return t;
  }

  const live = () => new AbortController().signal;

  describe(`the HTTPS transport ${where} reads an answer`, () => {
    it('keeps every response header as a pair, in order, repeated names included', async (t) => {
      const server = await serve((_req, res) => {
        res.setHeader('set-cookie', ['a=1', 'b=2']);
        res.setHeader('x-one', 'one');
        res.end('ok');
      });
      t.after(() => server.close());
      const r = await transport().send(delivery(server.url), live());
      assert.equal(r.statusCode, 200);
      assert.equal(r.responseBody?.toString(), 'ok');
      assert.equal(r.responseTruncated, false);
      assert.equal(r.errorClass, undefined);
      const cookies = r.responseHeaders!.filter(([n]) => n === 'set-cookie').map(([, v]) => v);
      assert.deepEqual(cookies, ['a=1', 'b=2']);
      assert.ok(r.responseHeaders!.some(([n, v]) => n === 'x-one' && v === 'one'));
    });

    it('records the final answer after an informational 103 Early Hints head', async (t) => {
      const server = await serve((_req, res) => {
        res.writeEarlyHints({ link: '</style.css>; rel=preload; as=style' });
        res.writeHead(202, { 'x-final': 'yes' });
        res.end('accepted');
      });
      t.after(() => server.close());
      const r = await transport().send(delivery(server.url), live());
      assert.equal(r.statusCode, 202);
      assert.equal(r.responseBody?.toString(), 'accepted');
      assert.ok(r.responseHeaders!.some(([n, v]) => n === 'x-final' && v === 'yes'));
      assert.ok(!r.responseHeaders!.some(([n]) => n === 'link'), 'the hints head is not the answer');
    });

    it('keeps an answer of exactly the cap whole, not truncated', async (t) => {
      const server = await serve((_req, res) => res.end(Buffer.alloc(CAP, 0x61)));
      t.after(() => server.close());
      const r = await transport().send(delivery(server.url), live());
      assert.equal(r.responseBody?.length, CAP);
      assert.equal(r.responseTruncated, false);
    });

    it('stops reading at the cap: an answer that never ends past it is not waited for', async (t) => {
      // more than the cap, in several writes, then the answer hangs open: only a reader that stops at the cap returns before the timeout
      const server = await serve((_req, res) => {
        res.writeHead(200, { 'content-type': 'application/octet-stream' });
        for (let i = 0; i < 8; i++) res.write(Buffer.alloc(512, 0x62 + i));
      });
      t.after(() => server.close());
      const r = await transport({ timeoutMs: 5_000 }).send(delivery(server.url), live());
      assert.equal(r.statusCode, 200);
      assert.equal(r.responseTruncated, true);
      assert.equal(r.responseBody?.length, CAP);
      assert.equal(r.responseBody!.subarray(0, 512).toString(), 'b'.repeat(512));
      assert.equal(r.errorMessage, undefined, 'a capped 2xx answer is a clean success');
      assert.ok(r.durationMs < 4_000, `returned at the cap, not at the timeout (${r.durationMs} ms)`);
    });
  });

  describe(`the HTTPS transport ${where} ends an attempt early`, () => {
    it('a 2xx head followed by a body that stalls past the timeout: a success, marked not fully read', async (t) => {
      const server = await serve((_req, res) => {
        res.writeHead(200, { 'content-length': '100' });
        res.write('partial');
      });
      t.after(() => server.close());
      const r = await transport({ timeoutMs: 300 }).send(delivery(server.url), live());
      assert.equal(r.statusCode, 200);
      assert.equal(r.errorClass, undefined);
      assert.equal(r.responseTruncated, true);
      assert.equal(r.responseBody?.toString(), 'partial');
      assert.match(r.errorMessage ?? '', /^answer body not fully read: no complete answer within 300 ms$/);
    });

    it('a connection cut in the middle of a 5xx answer: the status stands, the body is what arrived', async (t) => {
      const server = await serve((req, res) => {
        res.writeHead(503, { 'content-length': '100', 'retry-after': '7' });
        res.write('down', () => setTimeout(() => req.socket.destroy(), 20));
      });
      t.after(() => server.close());
      const r = await transport().send(delivery(server.url), live());
      assert.equal(r.statusCode, 503);
      assert.equal(r.errorClass, 'http_status');
      assert.equal(r.retryAfterSeconds, 7);
      assert.equal(r.responseTruncated, true);
      assert.equal(r.responseBody?.toString(), 'down');
    });

    it('no head within the timeout: timeout, with no status', async (t) => {
      const server = await serve(() => {});
      t.after(() => server.close());
      const r = await transport({ timeoutMs: 250 }).send(delivery(server.url), live());
      assert.equal(r.statusCode, undefined);
      assert.equal(r.errorClass, 'timeout');
      assert.equal(r.errorMessage, 'no complete answer within 250 ms');
      assert.equal(server.heads, 1);
    });

    it('the timeout counts the connection too: a TLS handshake that never completes ends at the attempt timeout', async (t) => {
      const unaccepted = await unacceptedPort();
      t.after(() => unaccepted.close());
      const started = performance.now();
      const r = await transport({ timeoutMs: 300, connectTimeoutMs: 20_000 }).send(delivery(`https://127.0.0.1:${unaccepted.port}/hook`), live());
      assert.equal(r.errorClass, 'timeout');
      assert.ok(performance.now() - started < 10_000, 'ended by the attempt timeout, not the connect timeout');
    });

    it('the worker stopping ends a waiting attempt at once', async (t) => {
      const server = await serve(() => {});
      t.after(() => server.close());
      const stop = new AbortController();
      const pending = transport({ timeoutMs: 30_000 }).send(delivery(server.url), stop.signal);
      while (server.heads === 0) await new Promise((r) => setTimeout(r, 5));
      const started = performance.now();
      stop.abort();
      const r = await pending;
      assert.equal(r.statusCode, undefined);
      assert.notEqual(r.errorClass, 'timeout');
      assert.ok(performance.now() - started < 5_000);
    });

    it('the deliveries of a worker share one signal: stopping ends every attempt still waiting, and only those', async (t) => {
      // the first 10 requests are answered at once, the next 40 never
      let seen = 0;
      const server = await serve((_req, res) => {
        if (++seen <= 10) res.end('ok');
      });
      t.after(() => server.close());
      const warnings: Error[] = [];
      const onWarning = (w: Error) => warnings.push(w);
      process.on('warning', onWarning);
      t.after(() => process.off('warning', onWarning));
      const tr = transport({ timeoutMs: 30_000 });
      const stop = new AbortController();
      const answered = await Promise.all(Array.from({ length: 10 }, () => tr.send(delivery(server.url), stop.signal)));
      assert.deepEqual(answered.map((r) => r.statusCode), Array(10).fill(200));
      const waiting = Array.from({ length: 40 }, () => tr.send(delivery(server.url), stop.signal));
      while (server.heads < 50) await new Promise((r) => setTimeout(r, 5));
      const started = performance.now();
      stop.abort();
      const ended = await Promise.all(waiting);
      assert.ok(performance.now() - started < 5_000);
      for (const r of ended) {
        assert.equal(r.statusCode, undefined);
        assert.notEqual(r.errorClass, 'timeout');
      }
      // the answered attempts were not ended again (their results stand), and 50 attempts on one signal leak no listeners
      assert.deepEqual(answered.map((r) => r.errorClass ?? null), Array(10).fill(null));
      await new Promise((r) => setImmediate(r));
      assert.deepEqual(warnings.map((w) => w.name), []);
    });

    it('a worker already stopping sends nothing', async (t) => {
      const server = await serve((_req, res) => res.end('ok'));
      t.after(() => server.close());
      const stop = new AbortController();
      stop.abort();
      const r = await transport().send(delivery(server.url), stop.signal);
      assert.equal(r.statusCode, undefined);
      // give a request that was wrongly sent time to arrive
      await new Promise((r) => setTimeout(r, 200));
      assert.equal(server.heads, 0);
    });
  });
}
