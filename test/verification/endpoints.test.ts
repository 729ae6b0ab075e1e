import assert from 'node:assert/strict';
import { createHmac, randomBytes } from 'node:crypto';
import { after, afterEach, before, beforeEach, describe, test } from 'node:test';
import Stripe from 'stripe';
import type { DeliveryWorker } from '../../src/delivery/worker.ts';
import { call, seedOrg, type Seeded } from '../helpers/app.ts';
import { afterEndpointNotify } from '../helpers/endpoint-notify.ts';
import { openTestDb, type TestDb } from '../helpers/db.ts';
import { startReceiver, type Receiver } from '../helpers/https.ts';
import { startTestWorker } from '../delivery/helpers.ts';
import { send, startHarness, storedCaptures, type Harness } from '../ingest/harness.ts';

// Issue 25 through the API and a real ingest listener: the setting on the
// endpoint (write-only secret, rotation, 400s that change nothing), the
// result on every capture and the filter, enforce (401, stored, not
// forwarded, not announced) and Weir-Verification on forwards.

const stripe = new Stripe('sk_test_unused');
let t: TestDb;
let h: Harness;
let worker: DeliveryWorker | undefined;
let receiver: Receiver | undefined;
/** Every API answer of the file, to prove no secret ever left. */
const answers: string[] = [];
const secrets: string[] = [];

before(async () => {
  t = await openTestDb();
  h = await startHarness(t.db);
});
beforeEach(() => t.reset());
afterEach(async () => {
  await worker?.stop();
  await receiver?.close();
  worker = undefined;
  receiver = undefined;
});
after(async () => {
  await h.close();
  await t.close();
});

const newSecret = () => {
  const s = 'whsec_' + randomBytes(18).toString('hex');
  secrets.push(s);
  return s;
};

async function api(method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, key: string, body?: unknown) {
  const r = await call(h.api.app, method, url, { key, body });
  answers.push(r.res.body);
  return r;
}

async function endpointWith(s: Seeded, verification: unknown, extra: Record<string, unknown> = {}) {
  const r = await api('POST', '/v1/endpoints', s.key, { name: 'stripe', verification, ...extra });
  assert.equal(r.status, 201, JSON.stringify(r.json));
  return r.json.data;
}

function stripeSigned(secret: string, payload: string, timestamp = Math.floor(Date.now() / 1000)) {
  return { 'content-type': 'application/json', 'stripe-signature': stripe.webhooks.generateTestHeaderString({ payload, secret, timestamp }) };
}

async function capture(slug: string, headers: Record<string, string>, body: Buffer | string, path = '') {
  return send(h.port, 'POST', `/h/${slug}${path}`, { headers, body });
}

describe('the setting', () => {
  test('create: reads show secret_last4 and the defaults, never the secret (POST, GET, list)', async () => {
    const s = await seedOrg(t.db);
    const secret = newSecret();
    const e = await endpointWith(s, { provider: 'stripe', secret });
    assert.deepEqual(e.verification, {
      provider: 'stripe',
      enforce: false,
      tolerance_seconds: 300,
      header: null,
      algorithm: null,
      encoding: null,
      prefix: null,
      secret_last4: secret.slice(-4),
      previous_secret_expires_at: null,
    });
    const one = await api('GET', `/v1/endpoints/${e.id}`, s.key);
    assert.deepEqual(one.json.data.verification, e.verification);
    const list = await api('GET', '/v1/endpoints', s.key);
    assert.deepEqual(list.json.data[0].verification, e.verification);
    // an endpoint without it
    const plain = (await api('POST', '/v1/endpoints', s.key, { name: 'plain' })).json.data;
    assert.equal(plain.verification, null);
  });

  test('hmac settings read back (header lowercased); PATCH without a secret keeps it; null removes verification', async () => {
    const s = await seedOrg(t.db);
    const secret = newSecret();
    const e = await endpointWith(s, { provider: 'hmac', secret, header: 'X-Signature', algorithm: 'sha1', encoding: 'base64', prefix: 'sha1=', tolerance_seconds: 60 });
    assert.deepEqual([e.verification.header, e.verification.algorithm, e.verification.encoding, e.verification.prefix], ['x-signature', 'sha1', 'base64', 'sha1=']);
    const body = 'payload';
    const sig = 'sha1=' + createHmac('sha1', secret).update(body).digest('base64');
    const p = await api('PATCH', `/v1/endpoints/${e.id}`, s.key, { verification: { provider: 'hmac', header: 'X-Signature', algorithm: 'sha1', encoding: 'base64', prefix: 'sha1=', enforce: true } });
    assert.equal(p.status, 200, JSON.stringify(p.json));
    assert.equal(p.json.data.verification.enforce, true);
    assert.equal(p.json.data.verification.secret_last4, secret.slice(-4));
    assert.equal((await capture(e.slug, { 'X-Signature': sig }, body)).status, 200, 'the kept secret still verifies');
    // the next capture must see verification gone, not the cached endpoint (test/helpers/endpoint-notify.ts)
    const off = await afterEndpointNotify(t.db, e.slug, () => api('PATCH', `/v1/endpoints/${e.id}`, s.key, { verification: null }));
    assert.equal(off.json.data.verification, null);
    const { rows } = await t.db.query('select verification, verification_secret, verification_previous_secret from endpoints where id = $1', [e.id]);
    assert.deepEqual(rows[0], { verification: null, verification_secret: null, verification_previous_secret: null });
    const r = await capture(e.slug, {}, body);
    assert.equal(r.status, 200);
    const got = await api('GET', `/v1/requests/${r.json.request_id}`, s.key);
    assert.equal(got.json.data.verification, null);
  });

  test('bad settings: 400 bad_request naming the field, and nothing stored changes', async () => {
    const s = await seedOrg(t.db);
    const secret = newSecret();
    const e = await endpointWith(s, { provider: 'github', secret });
    const before = (await t.db.query('select * from endpoints where id = $1', [e.id])).rows[0];
    const cases: Array<[unknown, string]> = [
      [{ provider: 'paypal', secret }, 'verification.provider'],
      [{ secret }, 'verification.provider'],
      [{ provider: 'github', secret: 'short' }, 'verification.secret'],
      [{ provider: 'github', secret: 42 }, 'verification.secret'],
      [{ provider: 'standard_webhooks', secret: 'not-a-whsec-secret' }, 'verification.secret'],
      [{ provider: 'github', secret, enforce: 'yes' }, 'verification.enforce'],
      [{ provider: 'github', secret, tolerance_seconds: 0 }, 'verification.tolerance_seconds'],
      [{ provider: 'github', secret, tolerance_seconds: 2.5 }, 'verification.tolerance_seconds'],
      [{ provider: 'github', secret, header: 'x-sig' }, 'verification.header'],
      [{ provider: 'hmac', secret, algorithm: 'sha256', encoding: 'hex' }, 'verification.header'],
      [{ provider: 'hmac', secret, header: 'bad header', algorithm: 'sha256', encoding: 'hex' }, 'verification.header'],
      [{ provider: 'hmac', secret, header: 'x-sig', algorithm: 'md5', encoding: 'hex' }, 'verification.algorithm'],
      [{ provider: 'hmac', secret, header: 'x-sig', algorithm: 'sha256', encoding: 'base32' }, 'verification.encoding'],
      [{ provider: 'github', secret, colour: 'red' }, 'verification.colour'],
      [{ provider: 'github', secret: newSecret(), previous_secret_expires_at: 'tomorrow' }, 'verification.previous_secret_expires_at'],
      [{ provider: 'github', secret: newSecret(), previous_secret_expires_at: '2001-01-01T00:00:00Z' }, 'verification.previous_secret_expires_at'],
      [{ provider: 'github', previous_secret_expires_at: '2099-01-01T00:00:00Z' }, 'verification.previous_secret_expires_at'],
      [{ provider: 'stripe' }, 'verification.secret'],
      ['stripe', 'verification'],
    ];
    for (const [verification, field] of cases) {
      for (const [method, url] of [['POST', '/v1/endpoints'], ['PATCH', `/v1/endpoints/${e.id}`]] as const) {
        const r = await api(method, url, s.key, method === 'POST' ? { name: 'x', verification } : { name: 'renamed', verification });
        assert.equal(r.status, 400, `${method} ${JSON.stringify(verification)}: ${r.res.body}`);
        assert.equal(r.json.error.code, 'bad_request');
        assert.ok(r.json.error.message.includes(field), `${JSON.stringify(verification)}: "${r.json.error.message}" should name ${field}`);
        for (const x of secrets) assert.ok(!r.res.body.includes(x), 'an error never echoes the secret');
      }
    }
    // a new endpoint needs a secret to set verification up at all
    const fresh = await api('POST', '/v1/endpoints', s.key, { name: 'x', verification: { provider: 'github' } });
    assert.equal(fresh.status, 400);
    assert.match(fresh.json.error.message, /verification\.secret/);
    assert.deepEqual((await t.db.query('select * from endpoints where id = $1', [e.id])).rows[0], before);
    assert.equal((await t.db.query<{ n: number }>('select count(*)::int as n from endpoints')).rows[0].n, 1);
  });

  test('changing verification needs endpoints.edit, as editing does: a viewer is refused', async () => {
    const s = await seedOrg(t.db);
    const e = await endpointWith(s, null);
    const { addMemberWithKey } = await import('../helpers/app.ts');
    const viewer = await addMemberWithKey(t.db, s.org.id, 'viewer');
    const r = await api('PATCH', `/v1/endpoints/${e.id}`, viewer.key, { verification: { provider: 'github', secret: newSecret() } });
    assert.equal(r.status, 403);
    assert.equal((await api('GET', `/v1/endpoints/${e.id}`, s.key)).json.data.verification, null);
  });
});

describe('captures', () => {
  test('verified and failed with reasons on GET /v1/requests/:id and the list, and ?verification= filters', async () => {
    const s = await seedOrg(t.db);
    const secret = newSecret();
    const e = await endpointWith(s, { provider: 'stripe', secret });
    const body = '{"id":"evt_1","type":"charge.succeeded"}';
    const sent = [
      [stripeSigned(secret, body), body, null],
      [stripeSigned(newSecret(), body), body, 'bad_signature'],
      [stripeSigned(secret, body), body.replace('evt_1', 'evt_2'), 'bad_signature'],
      [stripeSigned(secret, body, Math.floor(Date.now() / 1000) - 3600), body, 'timestamp_out_of_tolerance'],
      [{ 'content-type': 'application/json' }, body, 'missing_signature'],
      [{ 'stripe-signature': 't=abc,v1=zz' }, body, 'malformed_signature'],
    ] as const;
    const ids: string[] = [];
    for (const [headers, b] of sent) {
      const r = await capture(e.slug, headers, b);
      assert.equal(r.status, 200, 'without enforce every capture is acknowledged');
      ids.push(r.json.request_id);
    }
    for (let i = 0; i < sent.length; i++) {
      const got = await api('GET', `/v1/requests/${ids[i]}`, s.key);
      const reason = sent[i][2];
      assert.deepEqual(got.json.data.verification, reason === null ? { status: 'verified', reason: null } : { status: 'failed', reason }, `capture ${i}`);
      assert.equal(got.json.data.rejected, false);
      assert.equal(got.json.data.body, sent[i][1], 'byte-exact as ever');
    }
    const list = await api('GET', `/v1/endpoints/${e.id}/requests`, s.key);
    assert.deepEqual(list.json.data.data.map((c: any) => c.verification?.status), ['failed', 'failed', 'failed', 'failed', 'failed', 'verified']);
    const verified = await api('GET', `/v1/endpoints/${e.id}/requests?verification=verified`, s.key);
    assert.deepEqual(verified.json.data.data.map((c: any) => c.id), [ids[0]]);
    const failedOnes = await api('GET', `/v1/endpoints/${e.id}/requests?verification=failed`, s.key);
    assert.deepEqual(failedOnes.json.data.data.map((c: any) => c.id), ids.slice(1).reverse());
    const bad = await api('GET', `/v1/endpoints/${e.id}/requests?verification=maybe`, s.key);
    assert.equal(bad.status, 400);
    assert.match(bad.json.error.message, /verification/);
  });

  test('bodies: binary, form-encoded, empty and 5 MiB verify on the stored bytes', async () => {
    const s = await seedOrg(t.db);
    const secret = newSecret();
    const e = await endpointWith(s, { provider: 'stripe', secret });
    const binary = randomBytes(64 * 1024);
    const ts = Math.floor(Date.now() / 1000);
    const binarySig = createHmac('sha256', secret).update(`${ts}.`).update(binary).digest('hex');
    const cases: Array<[Record<string, string>, Buffer | string]> = [
      [{ 'content-type': 'application/octet-stream', 'stripe-signature': `t=${ts},v1=${binarySig}` }, binary],
      [{ ...stripeSigned(secret, 'a=1&b=%C3%A9+x&a=2'), 'content-type': 'application/x-www-form-urlencoded' }, 'a=1&b=%C3%A9+x&a=2'],
      [stripeSigned(secret, ''), ''],
      [stripeSigned(secret, 'y'.repeat(5 * 1024 * 1024)), 'y'.repeat(5 * 1024 * 1024)],
    ];
    for (const [headers, body] of cases) {
      const r = await capture(e.slug, headers, body);
      assert.equal(r.status, 200);
    }
    const rows = await storedCaptures(t.db, e.id);
    assert.equal(rows.length, 4);
    for (let i = 0; i < rows.length; i++) {
      const row = rows[i] as any;
      assert.equal(row.verification_status, 'verified', `body ${i}`);
      assert.equal(row.verification_reason, null);
      const sent = cases[i][1];
      assert.ok(Buffer.from(row.body).equals(typeof sent === 'string' ? Buffer.from(sent) : sent));
    }
  });

  test('rotation through PATCH: with previous_secret_expires_at both secrets verify until then; without it the old one stops at once', async () => {
    const s = await seedOrg(t.db);
    const first = newSecret();
    const second = newSecret();
    const third = newSecret();
    const e = await endpointWith(s, { provider: 'stripe', secret: first });
    const body = '{"rotate":true}';
    const status = async (secret: string) => {
      const r = await capture(e.slug, stripeSigned(secret, body), body);
      const row = (await t.db.query<{ verification_status: string }>('select verification_status from captured_requests where id = $1', [r.json.request_id])).rows[0];
      return row.verification_status;
    };
    const until = new Date(Date.now() + 3_600_000).toISOString();
    const p = await api('PATCH', `/v1/endpoints/${e.id}`, s.key, { verification: { provider: 'stripe', secret: second, previous_secret_expires_at: until } });
    assert.equal(p.status, 200, JSON.stringify(p.json));
    assert.equal(p.json.data.verification.secret_last4, second.slice(-4));
    assert.equal(p.json.data.verification.previous_secret_expires_at, until);
    assert.equal(await status(first), 'verified');
    assert.equal(await status(second), 'verified');
    // the overlap ends: stored as past, the old secret no longer verifies (the cache re-reads on the NOTIFY)
    await t.db.query(`update endpoints set verification_previous_expires_at = now() - interval '1 second' where id = $1`, [e.id]);
    await t.db.query(`select pg_notify('weir_endpoints', $1)`, [e.slug]);
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(await status(first), 'failed');
    assert.equal((await api('GET', `/v1/endpoints/${e.id}`, s.key)).json.data.verification.previous_secret_expires_at, null);
    const p2 = await api('PATCH', `/v1/endpoints/${e.id}`, s.key, { verification: { provider: 'stripe', secret: third } });
    assert.equal(p2.status, 200);
    assert.equal(await status(second), 'failed');
    assert.equal(await status(third), 'verified');
  });
});

describe('enforce and forwarding', () => {
  test('enforce: 401 {"error": "signature verification failed"}, stored with rejected: true, not forwarded, not announced; forwards say Weir-Verification', async () => {
    receiver = await startReceiver();
    const s = await seedOrg(t.db);
    const secret = newSecret();
    const e = await endpointWith(s, { provider: 'stripe', secret, enforce: true }, { forward_url: `${receiver.url}/hooks` });
    const sub = await api('POST', '/v1/subscriptions', s.key, { target_url: 'https://hooks.example.com/weir', event_types: ['request.captured'] });
    assert.equal(sub.status, 201, JSON.stringify(sub.json));

    const body = '{"id":"evt_enforced"}';
    const refused = await capture(e.slug, stripeSigned(newSecret(), body), body);
    assert.equal(refused.status, 401);
    assert.deepEqual(refused.json, { error: 'signature verification failed' });
    const accepted = await capture(e.slug, { ...stripeSigned(secret, body), 'Weir-Verification': 'forged' }, body);
    assert.equal(accepted.status, 200);

    const rows = (await storedCaptures(t.db, e.id)) as any[];
    assert.equal(rows.length, 2, 'the refused request is stored too');
    assert.deepEqual([rows[0].verification_status, rows[0].verification_reason, rows[0].rejected], ['failed', 'bad_signature', true]);
    assert.deepEqual([rows[1].verification_status, rows[1].rejected], ['verified', false]);
    const list = await api('GET', `/v1/endpoints/${e.id}/requests?verification=failed`, s.key);
    assert.equal(list.json.data.data.length, 1);
    assert.equal(list.json.data.data[0].rejected, true);
    assert.deepEqual(list.json.data.data[0].verification, { status: 'failed', reason: 'bad_signature' });
    assert.equal(list.json.data.data[0].delivery.status, 'no_destinations');

    const { rows: deliveries } = await t.db.query<{ request_id: string }>('select request_id from deliveries');
    assert.deepEqual(deliveries.map((d) => d.request_id), [rows[1].id], 'only the verified capture is queued');
    const { rows: announced } = await t.db.query<{ capture_id: string }>('select capture_id from capture_announcements');
    assert.deepEqual(announced.map((a) => a.capture_id), [rows[1].id], 'only the verified capture is announced');

    worker = await startTestWorker(t.db);
    const [got] = await receiver.waitFor(1);
    assert.equal(got.body.toString(), body);
    assert.equal(got.headers['weir-verification'], 'verified', "Weir's own header, the sender's forged one dropped");
    assert.equal(got.rawHeaders.filter((n) => n.toLowerCase() === 'weir-verification').length, 1);
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(receiver.received.length, 1, 'the rejected capture never reached the destination');
  });

  test('without enforce a failed capture is acknowledged and forwarded with Weir-Verification: failed; an endpoint without verification sends no such header', async () => {
    receiver = await startReceiver();
    const s = await seedOrg(t.db);
    const e = await endpointWith(s, { provider: 'stripe', secret: newSecret() }, { forward_url: `${receiver.url}/a` });
    const plain = await endpointWith(s, null, { forward_url: `${receiver.url}/b` });
    const r = await capture(e.slug, { 'content-type': 'application/json' }, '{}');
    assert.equal(r.status, 200);
    assert.equal((await capture(plain.slug, { 'Weir-Verification': 'verified' }, '{}')).status, 200);
    worker = await startTestWorker(t.db);
    const got = await receiver.waitFor(2);
    const a = got.find((x) => x.url === '/a')!;
    const b = got.find((x) => x.url === '/b')!;
    assert.equal(a.headers['weir-verification'], 'failed');
    assert.equal(b.headers['weir-verification'], undefined, 'a sender cannot forge the header');
  });
});

describe('the secret', () => {
  test('appears in no API answer of this file, no audit entry and no stored capture', async () => {
    const s = await seedOrg(t.db);
    const secret = newSecret();
    const e = await endpointWith(s, { provider: 'github', secret });
    await api('PATCH', `/v1/endpoints/${e.id}`, s.key, { verification: { provider: 'github', secret: newSecret(), previous_secret_expires_at: new Date(Date.now() + 60_000).toISOString() } });
    await capture(e.slug, {}, 'x');
    await api('GET', `/v1/endpoints/${e.id}/requests`, s.key);
    const audit = await t.db.query('select * from audit_log');
    const text = answers.join('\n') + JSON.stringify(audit.rows);
    assert.ok(answers.length > 20);
    for (const x of secrets) assert.ok(!text.includes(x), `secret ${x.slice(0, 8)}... leaked`);
  });
});
