import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { Writable } from 'node:stream';
import pg from 'pg';
import pino from 'pino';
import { newId } from '../../src/db/ids.ts';
import { announceLateCaptures } from '../../src/requests/late-captures.ts';
import { capturesAfter, LATE_WINDOW_MS, TailHub } from '../../src/requests/tail.ts';
import { TailStream } from '../../src/requests/tail-stream.ts';
import { seedOrg } from '../helpers/app.ts';
import { onPostgres, openTestDb, type TestDb } from '../helpers/db.ts';
import { insertCaptures, insertEndpoint } from '../helpers/fixtures.ts';
import { freshStore, http, startWeirProcess, type Store, type WeirProcess } from '../helpers/weir-process.ts';
import { openSse } from './sse-client.ts';

async function capture(node: WeirProcess, slug: string, body: string): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${node.ingestPort}/h/${slug}/tail?x=1`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  assert.equal(res.status, 200);
  return ((await res.json()) as { request_id: string }).request_id;
}

/**
 * Live tail through running Weir processes. On PostgreSQL two nodes share
 * the database and every capture is taken on the node the client is NOT
 * connected to; on PGlite (one process per data folder) both are one node.
 */
describe('live tail over Server-Sent Events', () => {
  let store: Store;
  let a: WeirProcess;
  let b: WeirProcess;
  let key: string;
  let endpoint: { id: string; slug: string };

  before(async () => {
    store = await freshStore();
    const env = { ...store.env, WEIR_SSE_HEARTBEAT_MS: '200' };
    a = await startWeirProcess(env);
    b = onPostgres ? await startWeirProcess(env) : a;
    key = a.bootstrapKey!;
    const ep = await http(a.base, 'POST', '/v1/endpoints', { token: key, body: { name: 'tailed' } });
    assert.equal(ep.status, 201);
    endpoint = ep.json.data;
  });
  after(async () => {
    await Promise.all([a?.stop('SIGKILL'), b?.stop('SIGKILL')]);
    await store?.drop();
  });

  const streamUrl = (node: WeirProcess, id = endpoint.id) => `${node.base}/v1/endpoints/${id}/requests/stream`;

  it('answers bad requests in the error envelope before any stream opens', async () => {
    const noKey = await fetch(streamUrl(b));
    assert.equal(noKey.status, 401);
    assert.equal(((await noKey.json()) as any).error.code, 'unauthorized');
    const cases: Array<[string, Record<string, string>, number, string]> = [
      [streamUrl(b, '00000000-0000-7000-8000-000000000000'), {}, 404, 'not_found'],
      [streamUrl(b, 'not-an-id'), {}, 404, 'not_found'],
      [streamUrl(b), { 'last-event-id': 'nope' }, 400, 'bad_request'],
      [`${streamUrl(b)}?last_event_id=nope`, {}, 400, 'bad_request'],
      [`${streamUrl(b)}?follow=1`, {}, 400, 'bad_request'],
    ];
    for (const [url, headers, status, code] of cases) {
      const res = await fetch(url, { headers: { authorization: `Bearer ${key}`, ...headers } });
      assert.equal(res.status, status, url);
      assert.equal(((await res.json()) as any).error.code, code, url);
    }
  });

  it('sends each capture taken on another node as one event with its id, and heartbeats', async () => {
    const sse = await openSse(streamUrl(b), key);
    try {
      assert.equal(sse.status, 200);
      assert.match(sse.contentType ?? '', /^text\/event-stream/);
      await sse.waitForComment(`following endpoint ${endpoint.id}`);
      await sse.waitForComment('live');
      const first = await capture(a, endpoint.slug, '{"n":1}');
      const second = await capture(a, endpoint.slug, '{"n":2}');
      const events = await sse.waitForEvents(2);
      assert.deepEqual(events.map((e) => e.id), [first, second]);
      assert.deepEqual(events.map((e) => e.event), ['request', 'request']);
      const data = JSON.parse(events[0].data);
      assert.equal(data.id, first);
      assert.equal(data.endpoint_id, endpoint.id);
      assert.equal(data.method, 'POST');
      assert.equal(data.path, '/tail');
      assert.equal(data.query, 'x=1');
      assert.equal(data.body_size, 7);
      await sse.waitForComment('heartbeat');
    } finally {
      sse.close();
    }
  });

  it('resumes after Last-Event-ID: a reconnecting client gets what it missed, in order, then live captures', async () => {
    const sse = await openSse(streamUrl(a), key);
    await sse.waitForComment('live');
    const seen = await capture(b, endpoint.slug, '{"n":"seen"}');
    await sse.waitForEvents(1);
    sse.close();
    const missed = [await capture(b, endpoint.slug, '{"n":"m1"}'), await capture(b, endpoint.slug, '{"n":"m2"}')];

    for (const resume of [{ 'last-event-id': seen }, undefined]) {
      const url = resume ? streamUrl(a) : `${streamUrl(a)}?last_event_id=${seen}`;
      const again = await openSse(url, key, resume);
      try {
        const backlog = await again.waitForEvents(2);
        assert.deepEqual(backlog.map((e) => e.id), missed);
        if (resume) {
          const live = await capture(b, endpoint.slug, '{"n":"live"}');
          missed.push(live);
          const events = await again.waitForEvents(3);
          assert.equal(events[2].id, live);
        }
        assert.ok(!again.events.some((e) => e.id === seen), 'the last event seen is not sent again');
      } finally {
        again.close();
      }
      missed.pop();
    }
  });

  /** Resolves with `p`, or rejects after `ms`: every wait here has a deadline. */
  const within = <T>(p: Promise<T>, ms: number, what: string) =>
    Promise.race([p, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`no ${what} within ${ms} ms`)), ms).unref())]);

  it('shows a capture sent as soon as the response headers arrive, every time', async () => {
    for (let i = 0; i < 5; i++) {
      const sse = await openSse(streamUrl(b), key);
      try {
        // no wait for the ": live" comment: the headers are the promise
        const id = await capture(a, endpoint.slug, `{"immediately":${i}}`);
        const [e] = await within(sse.waitForEvents(1), 20_000, 'event');
        assert.equal(e.id, id);
      } finally {
        sse.close();
      }
    }
  });

  it(`shows every capture of a burst (WEIR_TEST_TAIL_BURST, default 2000), once each`, async () => {
    const n = Number(process.env.WEIR_TEST_TAIL_BURST ?? 2000);
    const sse = await openSse(streamUrl(b), key);
    try {
      await within(sse.waitForComment('live'), 20_000, 'live comment');
      // a keep-alive connection the server closed as it was reused is sent again, as a sender would (it was not acknowledged)
      const send = async (body: string): Promise<string> => {
        for (let attempt = 1; ; attempt++) {
          try {
            return await capture(a, endpoint.slug, body);
          } catch (err) {
            if (attempt >= 3 || !(err instanceof TypeError)) throw err;
          }
        }
      };
      const ids: string[] = [];
      for (let i = 0; i < n; i += 50) {
        ids.push(...(await Promise.all(Array.from({ length: Math.min(50, n - i) }, (_, j) => send(`{"burst":${i + j}}`)))));
      }
      const events = await within(sse.waitForEvents(n), 120_000, `${n} events`);
      const got = events.map((e) => e.id!);
      assert.equal(new Set(got).size, got.length, 'no capture twice');
      const shown = new Set(got);
      assert.deepEqual(ids.filter((id) => !shown.has(id)), [], 'every acknowledged capture of the burst');
    } finally {
      sse.close();
    }
  });

  it('closes an open stream with a final event when its key is revoked, expires, loses requests:read, or its owner is deactivated', async () => {
    for (const change of ['revoke', 'scope', 'expire', 'deactivate'] as const) {
      let owner: string | undefined;
      if (change === 'deactivate') {
        const member = await http(a.base, 'POST', '/v1/members', { token: key, body: { email: `tail-${Date.now()}@example.com`, role: 'developer' } });
        assert.equal(member.status, 201, JSON.stringify(member.json));
        owner = member.json.data.id;
      }
      const body = {
        name: `tail ${change}`,
        access_mode: 'custom',
        scopes: ['requests:read'],
        // the stream is open well before this; its close comes from the expiry itself, not a periodic check
        ...(change === 'expire' ? { expires_at: new Date(Date.now() + 5_000).toISOString() } : {}),
        ...(owner ? { member_id: owner } : {}),
      };
      const made = await http(a.base, 'POST', '/v1/api-keys', { token: key, body });
      assert.equal(made.status, 201, JSON.stringify(made.json));
      const sse = await openSse(streamUrl(b), made.json.data.key);
      try {
        assert.equal(sse.status, 200);
        await within(sse.waitForComment('live'), 20_000, 'live comment');
        const r =
          change === 'revoke'
            ? await http(a.base, 'DELETE', `/v1/api-keys/${made.json.data.id}`, { token: key })
            : change === 'scope'
              ? await http(a.base, 'PATCH', `/v1/api-keys/${made.json.data.id}`, { token: key, body: { access_mode: 'custom', scopes: ['endpoints:read'] } })
              : change === 'deactivate'
                ? await http(a.base, 'PATCH', `/v1/members/${owner}`, { token: key, body: { active: false } })
                : undefined;
        if (r) assert.ok(r.status === 204 || r.status === 200, JSON.stringify(r.json));
        await within(sse.ended, 70_000, `end of the stream (${change})`);
        const last = sse.events[sse.events.length - 1];
        assert.equal(last?.event, 'closed', change);
        assert.equal(JSON.parse(last.data).error.code, change === 'scope' ? 'forbidden' : 'unauthorized', change);
      } finally {
        sse.close();
      }
    }
  });

  it('shows a capture whose commit was held well past the late window, once it is acknowledged', { skip: !onPostgres && 'PostgreSQL only: holding a commit needs a second connection' }, async () => {
    const sse = await openSse(streamUrl(b), key);
    const blocker = new pg.Client({ connectionString: store.env.DATABASE_URL });
    await blocker.connect();
    try {
      await within(sse.waitForComment('live'), 20_000, 'live comment');
      // a stalled database, as ingest sees it: the capture statement waits on this lock
      await blocker.query('begin');
      await blocker.query('lock table captured_requests in share mode');
      const sent = capture(a, endpoint.slug, '{"held":true}');
      const held = 12_000; // more than the tail's late window (10 s)
      await new Promise((r) => setTimeout(r, held));
      await blocker.query('commit');
      const id = await sent;
      const events = await within(sse.waitForEvents(1), 20_000, 'the held capture');
      assert.equal(events[0].id, id);
    } finally {
      await blocker.end().catch(() => {});
      sse.close();
    }
  });

  it('closes an open stream with a final event when its endpoint is deleted', async () => {
    const ep = await http(a.base, 'POST', '/v1/endpoints', { token: key, body: { name: 'deleted while tailed' } });
    assert.equal(ep.status, 201);
    const sse = await openSse(streamUrl(b, ep.json.data.id), key);
    try {
      await within(sse.waitForComment('live'), 20_000, 'live comment');
      const del = await http(a.base, 'DELETE', `/v1/endpoints/${ep.json.data.id}`, { token: key });
      assert.ok(del.status === 204 || del.status === 202 || del.status === 200, `${del.status}`);
      await within(sse.ended, 70_000, 'end of the stream');
      const last = sse.events[sse.events.length - 1];
      assert.equal(last?.event, 'closed');
      assert.equal(JSON.parse(last.data).error.code, 'not_found');
    } finally {
      sse.close();
    }
  });
});

describe('the live tail hub', () => {
  let t: TestDb;
  before(async () => {
    t = await openTestDb();
  });
  beforeEach(() => t.reset());
  after(() => t.close());

  it('is cut off with an overflow event once it is the bound behind, and memory stops growing', async () => {
    const { org } = await seedOrg(t.db);
    const ep = await insertEndpoint(t.db, org.id);
    const hub = new TailHub(t.db, pino({ level: 'silent' }), 20);
    // a socket whose peer never reads: writes only pile up in its buffer
    const written: string[] = [];
    const out = new (class extends Writable {
      // everything the stream writes, whether the peer took it or it waits in the buffer
      override write(chunk: unknown, ...rest: never[]): boolean {
        written.push(String(chunk));
        return super.write(chunk, ...rest);
      }
    })({ highWaterMark: 1, write: () => {} });
    let ended = false;
    const stream = new TailStream(out, { heartbeatMs: 60_000, maxBufferedBytes: 4096 }, () => (ended = true));
    await stream.start(hub, org.id, ep.id);
    const ids = (await insertCaptures(t.db, ep, Array.from({ length: 40 }, (_, i) => ({ body: `{"i":${i}}` })))).map((c) => c.id);
    const deadline = Date.now() + 30_000;
    while (!ended) {
      if (Date.now() > deadline) throw new Error('timed out waiting for the slow consumer to be cut off');
      await new Promise((r) => setTimeout(r, 20));
    }
    hub.stop();
    const text = written.join('');
    assert.match(text, /event: overflow\ndata: \{"error":\{"code":"slow_consumer"/);
    // the overflow event names the last event written: the Last-Event-ID to resume from
    const overflow = JSON.parse(text.slice(text.indexOf('event: overflow\ndata: ') + 'event: overflow\ndata: '.length).split('\n')[0]);
    assert.ok(out.writableLength < 4096 + 2048, `buffered ${out.writableLength} bytes`);
    const sent = [...text.matchAll(/^id: (\S+)$/gm)].map((m) => m[1]);
    assert.ok(sent.length > 0 && sent.length < ids.length, `${sent.length} of ${ids.length} events before the cut`);
    assert.deepEqual(sent, ids.slice(0, sent.length));
    assert.equal(overflow.last_event_id, sent[sent.length - 1]);
    // what it missed is still readable after the last event it got
    const rest = await capturesAfter(t.db, org.id, ep.id, sent[sent.length - 1]);
    assert.deepEqual(rest.map((c) => c.id), ids.slice(sent.length));
  });

  it('pushes a capture that committed long after it arrived once a late-capture notice names it, exactly once', async () => {
    const { org } = await seedOrg(t.db);
    const ep = await insertEndpoint(t.db, org.id);
    const hub = new TailHub(t.db, pino({ level: 'silent' }), 20);
    await hub.start();
    const pushed: string[] = [];
    const sub = hub.subscribe({ organizationId: org.id, endpointId: ep.id, push: (c) => pushed.push(c.id) });
    try {
      await sub.ready;
      const waitFor = async (what: string, ok: () => boolean) => {
        for (const deadline = Date.now() + 20_000; !ok(); await new Promise((r) => setTimeout(r, 20))) {
          if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; pushed ${pushed.join(',')}`);
        }
      };
      const [fresh] = await insertCaptures(t.db, ep, [{ body: '{"fresh":1}' }]);
      await waitFor('the fresh capture', () => pushed.includes(fresh.id));
      // arrived well before the late window, visible only now: what a stalled commit looks like
      const arrived = (Date.now() - 3 * LATE_WINDOW_MS).toString(16).padStart(12, '0');
      const lateId = `${arrived.slice(0, 8)}-${arrived.slice(8)}${newId().slice(13)}`;
      const [late] = await insertCaptures(t.db, ep, [{ id: lateId, body: '{"late":1}' }]);
      const [after] = await insertCaptures(t.db, ep, [{ body: '{"after":1}' }]);
      await waitFor('the capture after it', () => pushed.includes(after.id));
      // several looks, including late checks, pass it over: without a notice it would never be shown
      await new Promise((r) => setTimeout(r, 300));
      assert.ok(!pushed.includes(late.id), 'a capture older than the late window is found only through a notice');
      await announceLateCaptures(t.db, [{ id: late.id, endpoint_id: ep.id }]);
      await waitFor('the late capture', () => pushed.includes(late.id));
      // the same notice again (two nodes, or a retry) and the periodic checks push nothing twice
      await announceLateCaptures(t.db, [{ id: late.id, endpoint_id: ep.id }, { id: fresh.id, endpoint_id: ep.id }]);
      await new Promise((r) => setTimeout(r, 300));
      assert.deepEqual(pushed, [fresh.id, after.id, late.id]);
    } finally {
      sub.unsubscribe();
      hub.stop();
    }
  });
});
