import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import Stripe from 'stripe';
import { cleanEnv, freshStore, http, runWeirToEnd, startWeirProcess, type Store, type WeirProcess } from '../helpers/weir-process.ts';

// Issue 25: the verification secret is write-only. A real `weir serve`,
// logging at debug, is given secrets (create, rotation, a refused PATCH),
// verifies captures with them, is scraped and exported from; none of its
// output, answers, metrics or the export holds a secret.

let store: Store;
let weir: WeirProcess;
let home: string;
before(async () => {
  store = await freshStore();
  weir = await startWeirProcess({ ...store.env, WEIR_LOG_LEVEL: 'debug' });
  home = mkdtempSync(join(tmpdir(), 'weir-verify-home-'));
});
after(async () => {
  await weir?.stop();
  await store?.drop();
  rmSync(home, { recursive: true, force: true });
});

test('no secret in any answer, log line, metric or export of a real weir serve', async () => {
  const key = weir.bootstrapKey!;
  // the third is no Standard Webhooks secret (no whsec_ prefix): refused
  const secrets = ['whsec_' + randomBytes(20).toString('hex'), 'whsec_' + randomBytes(20).toString('hex'), 'refused-' + randomBytes(20).toString('hex')];
  const answers: unknown[] = [];
  const api = async (method: string, path: string, body?: unknown) => {
    const r = await http(weir.base, method, path, { token: key, body });
    answers.push(r);
    return r;
  };

  const created = await api('POST', '/v1/endpoints', { name: 'stripe', verification: { provider: 'stripe', secret: secrets[0], enforce: true } });
  assert.equal(created.status, 201);
  const e = created.json.data;
  const rotated = await api('PATCH', `/v1/endpoints/${e.id}`, {
    verification: { provider: 'stripe', secret: secrets[1], previous_secret_expires_at: new Date(Date.now() + 600_000).toISOString(), enforce: true },
  });
  assert.equal(rotated.status, 200);
  // refused settings carrying a secret: the error names the field, not the value
  const refused = await api('PATCH', `/v1/endpoints/${e.id}`, { verification: { provider: 'standard_webhooks', secret: secrets[2] } });
  assert.equal(refused.status, 400);

  const stripe = new Stripe('sk_test_unused');
  const ingest = `http://127.0.0.1:${weir.ingestPort}/h/${e.slug}`;
  const payload = '{"id":"evt_leak"}';
  for (const secret of [secrets[0], secrets[1], 'whsec_wrong_secret_value']) {
    const res = await fetch(ingest, { method: 'POST', headers: { 'content-type': 'application/json', 'stripe-signature': stripe.webhooks.generateTestHeaderString({ payload, secret }) }, body: payload });
    answers.push({ status: res.status, body: await res.text() });
  }
  assert.deepEqual(answers.slice(-3).map((a: any) => a.status), [200, 200, 401]);
  const list = await api('GET', `/v1/endpoints/${e.id}/requests`);
  assert.deepEqual(list.json.data.data.map((c: any) => c.verification.status), ['failed', 'verified', 'verified']);
  await api('GET', '/v1/endpoints');
  await api('GET', `/v1/endpoints/${e.id}`);
  await api('GET', '/v1/audit-log');
  const metrics = await (await fetch(`${weir.base}/metrics`)).text();
  assert.match(metrics, /weir_verifications_total\{provider="stripe",outcome="verified"\} 2/);
  assert.match(metrics, /weir_verifications_total\{provider="stripe",outcome="failed"\} 1/);
  assert.match(metrics, /weir_captures_refused_total\{reason="unverified"\} 1/);

  const env = cleanEnv({ XDG_CONFIG_HOME: home, HOME: home });
  const login = await runWeirToEnd(['login', '--server', weir.base, '--key', key], env);
  assert.equal(login.code, 0, login.stderr);
  const file = join(home, 'export.ndjson');
  const exported = await runWeirToEnd(['requests', 'export', e.id, '--out', file], env);
  assert.equal(exported.code, 0, exported.stderr);
  const exportText = readFileSync(file, 'utf8');
  assert.equal(exportText.trim().split('\n').length, 3);

  const everything = [JSON.stringify(answers), metrics, exportText, exported.stdout, exported.stderr, weir.stdout(), weir.stderr()].join('\n');
  assert.ok(weir.stdout().length + weir.stderr().length > 0, 'the server logged');
  for (const s of secrets) assert.ok(!everything.includes(s), `a secret (${s.slice(0, 10)}...) appears in the output`);
});
