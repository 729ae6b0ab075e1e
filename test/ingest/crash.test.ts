import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { test } from 'node:test';
import { onPostgres } from '../helpers/db.ts';
import { startReceiver, testCa } from '../helpers/https.ts';
import { freshStore, http as api, startWeirProcess, type WeirProcess } from '../helpers/weir-process.ts';
import { sha256 } from './harness.ts';

// The durability invariant on whichever store the suite runs on, the
// embedded default included: `weir serve` is SIGKILLed in the middle of a
// burst of captures and started again at once on the same database (the
// same WEIR_DATA_DIR on PGlite), as a supervisor would, without waiting for
// the killed process to be reaped. Every acknowledged capture must be stored
// byte for byte and forwarded at least once.

interface Sent {
  marker: string;
  hash: string;
  requestId?: string;
}

function post(agent: http.Agent, port: number, path: string, marker: string, body: Buffer): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path, method: 'POST', agent, headers: { 'x-marker': marker, 'content-type': 'application/octet-stream' } }, (res) => {
      let text = '';
      res.on('data', (d) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

test(`kill -9 in the middle of a capture burst on ${onPostgres ? 'PostgreSQL' : 'PGlite'} loses no acknowledged request, and the restart forwards every one`, { timeout: 240_000 }, async (t) => {
  const store = await freshStore();
  t.after(() => store.drop());
  const rx = await startReceiver();
  t.after(() => rx.close());
  const env = {
    ...store.env,
    WEIR_ALLOW_PRIVATE_DESTINATIONS: '1',
    NODE_EXTRA_CA_CERTS: testCa().caFile,
    // On PostgreSQL the deliveries the killed process held wait for their
    // leases to expire (other nodes may be alive): short ones, so that takes
    // seconds. On PGlite the restart gives them back at once (the lock proves
    // their holder is dead), with the default leases.
    ...(onPostgres ? { WEIR_FORWARD_TIMEOUT_MS: '5000', WEIR_DELIVERY_LEASE_MS: '7000', WEIR_DELIVERY_POLL_MS: '1000' } : {}),
  };
  const node: WeirProcess = await startWeirProcess(env);
  t.after(() => node.stop('SIGKILL'));
  const key = node.bootstrapKey;
  assert.ok(key, 'first start prints a key');
  const created = await api(node.base, 'POST', '/v1/endpoints', { token: key, body: { name: 'crash', forward_url: `${rx.url}/hook` } });
  assert.equal(created.status, 201, JSON.stringify(created.json));
  const slug = created.json.data.slug;

  // 40 senders in a loop, each body random binary. Before the kill every
  // answer must be a 200: anything else (or a connection failure) stops
  // every sender and fails the test at once instead of hanging it. After the
  // kill, each sender stops at its first connection failure.
  const acked: Sent[] = [];
  const cutOff: Sent[] = [];
  const unexpected: string[] = [];
  const agent = new http.Agent({ keepAlive: true, maxSockets: 40 });
  let killed = false;
  let stop = false;
  let killAt!: () => void;
  const killNow = new Promise<void>((r) => (killAt = r));
  const sender = async (w: number) => {
    for (let i = 0; !stop; i++) {
      const body = randomBytes(256 + Math.floor(Math.random() * 8192));
      const sent: Sent = { marker: `${w}-${i}`, hash: sha256(body) };
      const wasKilled = killed;
      try {
        const r = await post(agent, node.ingestPort, `/h/${slug}/w${w}`, sent.marker, body);
        if (r.status !== 200) throw new Error(`answered ${r.status} ${r.text}`);
        sent.requestId = JSON.parse(r.text).request_id;
        acked.push(sent);
        if (acked.length === 400) killAt();
      } catch (err) {
        if (!wasKilled && !killed) {
          unexpected.push(`${sent.marker}: ${(err as Error).message}`);
          stop = true;
          killAt();
        } else if ((err as { code?: string }).code) cutOff.push(sent);
        else unexpected.push(`${sent.marker} after the kill: ${(err as Error).message}`);
        return;
      }
    }
  };
  const senders = Promise.all(Array.from({ length: 40 }, (_, w) => sender(w)));
  await killNow;
  assert.deepEqual(unexpected, [], 'every answer before the kill was a 200');
  killed = true;
  node.child.kill('SIGKILL');
  // the supervisor's restart: at once, on the same store, while the killed process may still be exiting
  const restarted = await startWeirProcess(env);
  t.after(() => restarted.stop());
  await senders;
  agent.destroy();
  assert.deepEqual(unexpected, []);
  assert.ok(cutOff.length > 0, 'the kill cut senders off (connection failures after it)');
  t.diagnostic(`acknowledged ${acked.length}, cut off by the kill ${cutOff.length}`);

  // The restarted process serves every acknowledged capture, byte for byte.
  for (const a of acked) {
    const res = await fetch(`${restarted.base}/v1/requests/${a.requestId}/body`, { headers: { authorization: `Bearer ${key}` } });
    assert.equal(res.status, 200, `acknowledged ${a.requestId} is stored`);
    assert.equal(sha256(Buffer.from(await res.arrayBuffer())), a.hash, `body of ${a.requestId} is byte-identical`);
  }
  const meta = await api(restarted.base, 'GET', `/v1/requests/${acked[0].requestId}`, { token: key });
  assert.ok(JSON.stringify(meta.json).includes(acked[0].marker), 'headers kept');

  // ... and forwards every one at least once (the killed process may have sent some already).
  const wanted = new Set(acked.map((a) => `msg_${a.requestId}`));
  const forwarded = () => new Set(rx.received.map((r) => r.headers['webhook-id'] as string));
  const deadline = Date.now() + 180_000;
  while ([...wanted].some((id) => !forwarded().has(id))) {
    if (Date.now() > deadline) {
      const missing = [...wanted].filter((id) => !forwarded().has(id));
      assert.fail(`${missing.length} acknowledged captures were never forwarded, e.g. ${missing.slice(0, 3).join(', ')}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
});
