import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { waitUntil } from '../delivery/helpers.ts';
import { closedPort, startReceiver, testCa, type Receiver } from '../helpers/https.ts';
import { freshStore, http, startWeirProcess, type Store, type WeirProcess } from '../helpers/weir-process.ts';

const METRICS_TOKEN = 'metrics-token-0123456789';

type Samples = Map<string, number>;

/** Parses Prometheus text: `name{a="b",…} value` lines keyed by name plus their labels as written. */
function parse(text: string): Samples {
  const samples: Samples = new Map();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][\w:]*(?:\{[^}]*\})?) (\S+)$/.exec(line);
    assert.ok(m, `a sample line: ${line}`);
    samples.set(m[1], Number(m[2]));
  }
  return samples;
}

async function scrape(weir: WeirProcess, token: string | null = METRICS_TOKEN): Promise<{ status: number; type: string | null; text: string }> {
  const res = await fetch(`${weir.base}/metrics`, { headers: token ? { authorization: `Bearer ${token}` } : {} });
  return { status: res.status, type: res.headers.get('content-type'), text: await res.text() };
}

/** A metered Weir's environment on `store`: forwards to loopback over the test CA, /metrics behind METRICS_TOKEN. */
function meteredEnv(store: Store, extra: Record<string, string> = {}): Record<string, string | undefined> {
  return { ...store.env, WEIR_ALLOW_PRIVATE_DESTINATIONS: '1', NODE_EXTRA_CA_CERTS: testCa().caFile, WEIR_METRICS_TOKEN: METRICS_TOKEN, ...extra };
}

async function capture(weir: WeirProcess, slug: string, body = '{}'): Promise<number> {
  const res = await fetch(`http://127.0.0.1:${weir.ingestPort}/h/${slug}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  await res.arrayBuffer();
  return res.status;
}

describe('Prometheus metrics of a running Weir', () => {
  let store: Store;
  let weir: WeirProcess;
  let rx: Receiver;

  before(async () => {
    store = await freshStore();
    rx = await startReceiver();
    weir = await startWeirProcess(meteredEnv(store, { WEIR_MAX_BODY_BYTES: '1024' }));
  });
  after(async () => {
    await weir?.stop('SIGKILL');
    await rx?.close();
    await store?.drop();
  });

  it('refuses a scrape without the metrics token, in the error envelope', async () => {
    for (const token of [null, 'wrong-token-0123456789']) {
      const r = await scrape(weir, token);
      assert.equal(r.status, 401);
      assert.equal(JSON.parse(r.text).error.code, 'unauthorized');
    }
  });

  it('counts what the test did: acknowledged and refused captures, groups, forwards, with bounded labels', async () => {
    const key = weir.bootstrapKey!;
    const ep = await http(weir.base, 'POST', '/v1/endpoints', { token: key, body: { name: 'metered', forward_url: `${rx.url}/in` } });
    assert.equal(ep.status, 201, JSON.stringify(ep.json));
    const { id, slug } = ep.json.data;

    for (let i = 0; i < 3; i++) assert.equal(await capture(weir, slug), 200);
    assert.equal(await capture(weir, 'no-such-slug'), 404);
    assert.equal(await capture(weir, slug, 'x'.repeat(2048)), 413);
    assert.equal((await http(weir.base, 'PATCH', `/v1/endpoints/${id}`, { token: key, body: { paused: true } })).status, 200);
    assert.equal(await capture(weir, slug), 423);
    await rx.waitFor(3);

    const s = await waitUntil(async () => {
      const r = await scrape(weir);
      const samples = parse(r.text);
      return samples.get('weir_delivery_attempts_total{outcome="succeeded",destination_type="https"}') === 3 ? { r, samples } : undefined;
    }, 'the three forwards counted');
    assert.match(s.r.type ?? '', /^text\/plain; version=0\.0\.4/);
    const m = s.samples;
    assert.equal(m.get('weir_captures_acknowledged_total'), 3);
    assert.equal(m.get('weir_captures_refused_total{reason="not_found"}'), 1);
    assert.equal(m.get('weir_captures_refused_total{reason="too_large"}'), 1);
    assert.equal(m.get('weir_captures_refused_total{reason="paused"}'), 1);
    assert.equal(m.get('weir_captures_refused_total{reason="malformed"}'), 0);
    assert.equal(m.get('weir_capture_ack_seconds_count'), 3);
    assert.ok(m.get('weir_capture_ack_seconds_sum')! > 0);
    // three captures sent one after another: groups of one each, or fewer bigger ones, always 3 captures in all
    assert.equal(m.get('weir_capture_group_size_sum'), 3);
    assert.equal(m.get('weir_delivery_attempts_total{outcome="failed",destination_type="https"}'), 0);
    assert.equal(m.get('weir_delivery_attempt_seconds_count{destination_type="https"}'), 3);
    assert.equal(m.get('weir_delivery_queue_depth'), 0);
    assert.equal(m.get('weir_delivery_oldest_due_seconds'), 0);
    assert.equal(m.get('weir_agent_connections'), 0);
    // all three forwards answered: nothing held, no body bytes
    assert.equal(m.get('weir_delivery_held'), 0);
    assert.equal(m.get('weir_delivery_held_bytes'), 0);
    assert.ok(m.has('process_cpu_user_seconds_total'), 'the default Node process metrics');
    assert.ok(m.has('nodejs_eventloop_lag_seconds'));
    if (store.env.DATABASE_URL) {
      // the pool's state at the scrape's instant: within the pool size (WEIR_DB_POOL_SIZE, 10)
      const [inUse, idle] = [m.get('weir_db_pool_connections{state="in_use"}')!, m.get('weir_db_pool_connections{state="idle"}')!];
      assert.ok(inUse + idle >= 1 && inUse + idle <= 10, `in use ${inUse}, idle ${idle}`);
      assert.ok(m.get('weir_db_pool_waiting')! >= 0);
    }
    // no label carries a slug, an id or a URL
    for (const name of m.keys()) {
      assert.ok(!name.includes(slug) && !name.includes(id) && !name.includes('127.0.0.1'), name);
    }
  });

  it('reports a delivery waiting for its retry in the queue depth', async () => {
    const key = weir.bootstrapKey!;
    // nothing listens there: the failed first attempt leaves one delivery pending its retry
    const ep = await http(weir.base, 'POST', '/v1/endpoints', { token: key, body: { name: 'down', forward_url: `https://127.0.0.1:${await closedPort()}/in` } });
    assert.equal(await capture(weir, ep.json.data.slug), 200);
    const m = await waitUntil(async () => {
      const samples = parse((await scrape(weir)).text);
      return samples.get('weir_delivery_attempts_total{outcome="pending",destination_type="https"}') === 1 ? samples : undefined;
    }, 'the failed attempt counted as pending a retry');
    assert.equal(m.get('weir_delivery_queue_depth'), 1);
  });

  it('reports the deliveries this node holds and their bodies\' bytes while a forward waits for its answer', async () => {
    const key = weir.bootstrapKey!;
    const slow = await startReceiver({ reply: () => 'hang' });
    try {
      const ep = await http(weir.base, 'POST', '/v1/endpoints', { token: key, body: { name: 'held', forward_url: `${slow.url}/in` } });
      assert.equal(await capture(weir, ep.json.data.slug, '{"held":"' + 'x'.repeat(90) + '"}'), 200);
      await slow.waitFor(1);
      const m = await waitUntil(async () => {
        const samples = parse((await scrape(weir)).text);
        return samples.get('weir_delivery_held') === 1 ? samples : undefined;
      }, 'the hanging forward counted as held');
      assert.equal(m.get('weir_delivery_held_bytes'), 101);
    } finally {
      await slow.close();
    }
  });
});

describe('the hand-off, counted, and switched off (WEIR_FORWARD_HANDOFF)', () => {
  let rx: Receiver;
  before(async () => (rx = await startReceiver()));
  after(async () => rx?.close());

  /** A Weir of its own with `env`, an endpoint forwarding to rx, and what posting `n` captures one after another did. */
  async function forwarded(env: Record<string, string>, n: number): Promise<Samples> {
    const store = await freshStore();
    const weir = await startWeirProcess(meteredEnv(store, env));
    try {
      const key = weir.bootstrapKey!;
      const ep = await http(weir.base, 'POST', '/v1/endpoints', { token: key, body: { name: 'quick', forward_url: `${rx.url}/in` } });
      assert.equal(ep.status, 201, JSON.stringify(ep.json));
      const before = rx.received.length;
      // one at a time, each once the one before arrived: an idle worker with free send slots, as the hand-off needs
      for (let i = 0; i < n; i++) {
        assert.equal(await capture(weir, ep.json.data.slug, `{"n":${i}}`), 200);
        await rx.waitFor(before + i + 1);
      }
      return await waitUntil(async () => {
        const samples = parse((await scrape(weir)).text);
        return samples.get('weir_delivery_attempts_total{outcome="succeeded",destination_type="https"}') === n ? samples : undefined;
      }, `the ${n} forwards recorded`);
    } finally {
      await weir.stop('SIGKILL');
      await store.drop();
    }
  }

  it('counts the forwards handed to an idle worker; with WEIR_FORWARD_HANDOFF=0 none is, and every forward still arrives', async () => {
    const on = await forwarded({}, 5);
    // the first capture may meet a worker whose first pass has not ended yet; the ones after it meet an idle one
    assert.ok(on.get('weir_delivery_handed_off_total')! >= 4, `handed off: ${on.get('weir_delivery_handed_off_total')}`);
    const off = await forwarded({ WEIR_FORWARD_HANDOFF: '0' }, 5);
    assert.equal(off.get('weir_delivery_handed_off_total'), 0);
  });
});

