#!/usr/bin/env node
// Screenshots of the dashboard's main pages at 1280 and 390 px, for
// docs/screenshots/ and the README. It starts a real `weir serve` on a fresh
// temporary data directory with free ports, seeds demo data through the API
// only (captures over real HTTP to the ingest URL), and drives Debian's
// Chromium through playwright-core.
//
//   node scripts/screenshots.mjs [--out docs/screenshots] [--only keys,usage] [--widths 1280,390]
//
// A page whose module is not there yet (the route table lists it, the file
// is missing) is logged and skipped, not fatal.
import { spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { chromium } from 'playwright-core';

/* global document -- in the functions that run in the page */

const ROOT = new URL('..', import.meta.url).pathname;
const { values: args } = parseArgs({
  options: {
    out: { type: 'string', default: join(ROOT, 'docs/screenshots') },
    only: { type: 'string' },
    widths: { type: 'string', default: '1280,390' },
  },
});
const OUT = resolve(args.out);
const ONLY = args.only ? new Set(args.only.split(',')) : null;
const WIDTHS = args.widths.split(',').map(Number);
const log = (...a) => console.log('[screenshots]', ...a);

/** A TCP port nothing listens on (bound, then released): the destination that refuses connections. */
function closedPort() {
  return new Promise((done, fail) => {
    const s = createServer();
    s.on('error', fail);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => done(port));
    });
  });
}

/** Starts `weir serve` and answers { api, ingest, key, stop } once its banner is printed. */
async function startWeir(dataDir, adminToken) {
  const child = spawn(process.execPath, [join(ROOT, 'bin/weir.mjs'), 'serve'], {
    cwd: ROOT,
    env: {
      ...process.env,
      WEIR_DATA_DIR: dataDir,
      WEIR_API_PORT: '0',
      WEIR_INGEST_PORT: '0',
      WEIR_ADMIN_TOKEN: adminToken,
      // the demo's failing destination is on 127.0.0.1
      WEIR_ALLOW_PRIVATE_DESTINATIONS: '1',
      WEIR_LOG_LEVEL: 'warn',
      DATABASE_URL: '',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const stop = () =>
    new Promise((done) => {
      if (child.exitCode !== null) return done();
      child.once('exit', done);
      child.kill('SIGTERM');
      setTimeout(() => child.kill('SIGKILL'), 10_000).unref();
    });
  const ready = await new Promise((done, fail) => {
    const timer = setTimeout(() => fail(new Error(`weir serve printed no banner in 60 s:\n${out}`)), 60_000);
    const check = () => {
      const api = /API:\s+(http:\/\/\S+)\/v1/.exec(out)?.[1];
      const ingest = /Ingest:\s+(http:\/\/\S+)\/h\//.exec(out)?.[1];
      const key = /(wr_live_[A-Za-z0-9_]+)/.exec(out)?.[1];
      if (api && ingest && key) {
        clearTimeout(timer);
        done({ api, ingest, key });
      }
    };
    child.stdout.on('data', (d) => ((out += d), check()));
    child.stderr.on('data', (d) => (out += d));
    child.once('exit', (code) => fail(new Error(`weir serve exited (${code}):\n${out}`)));
  });
  return { ...ready, stop };
}

/** A JSON call to the API; throws with the API's message on an error. */
function client(base, key) {
  return async (method, path, body) => {
    const res = await fetch(base + path, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const json = res.status === 204 ? null : await res.json().catch(() => null);
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${json?.error?.message ?? ''}`);
    return json?.data;
  };
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Polls `fn` until it answers something truthy, or gives up (null) after `ms`. */
async function waitFor(fn, ms) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    const v = await fn().catch(() => null);
    if (v) return v;
    await sleep(500);
  }
  return null;
}

/** Demo data through the API: what a team a week into Weir would have. */
async function seed({ api: base, ingest, key }, adminToken) {
  const api = client(base + '/v1', key);
  const admin = client(base + '/admin/v1', adminToken);
  const me = await api('GET', '/me');
  // the first-start organization is "Default" on the free plan: make it look like a real team's
  await admin('PATCH', `/organizations/${me.organization.id}`, { name: 'Acme Payments', plan: 'starter' });

  const stripe = await api('POST', '/endpoints', { name: 'Stripe production', description: 'Live-mode events from Stripe' });
  const github = await api('POST', '/endpoints', { name: 'GitHub app', description: 'Pushes and pull requests of the acme org' });

  // a destination that refuses connections, retries off: its failures open an incident honestly
  const refused = await closedPort();
  await api('POST', '/destinations', {
    name: 'Orders service',
    url: `https://127.0.0.1:${refused}/webhooks/stripe`,
    endpoint_id: stripe.id,
    retry_enabled: false,
  }).catch((e) => log('destination not created:', e.message));
  await api('POST', '/destinations', { name: 'Analytics collector', url: 'https://collector.example.com/ingest', is_reusable: true }).catch((e) =>
    log('saved destination not created:', e.message),
  );
  await api('POST', '/agents', { name: 'ada-laptop', environment: 'development' }).catch((e) => log('agent not enrolled:', e.message));

  // captures over real HTTP: JSON, a form, binary
  const send = (endpoint, path, init) => fetch(`${endpoint.ingest_url}${path}`, init);
  for (const [i, type] of ['payment_intent.succeeded', 'charge.refunded', 'customer.subscription.updated', 'invoice.paid'].entries()) {
    await send(stripe, '/stripe', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'stripe-signature': `t=${1763900000 + i},v1=${randomBytes(32).toString('hex')}`, 'user-agent': 'Stripe/1.0 (+https://stripe.com/docs/webhooks)' },
      body: JSON.stringify({ id: `evt_${randomBytes(12).toString('hex')}`, object: 'event', type, livemode: true, data: { object: { id: `pi_${randomBytes(8).toString('hex')}`, amount: 4200 + i * 1000, currency: 'eur', customer: 'cus_QX81' } } }),
    });
  }
  await send(stripe, '/legacy/ipn?source=paypal', {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: 'txn_id=61E67681CH3238416&payment_status=Completed&mc_gross=19.95&mc_currency=EUR&payer_email=buyer%40example.com',
  });
  await send(stripe, '/exports/batch.bin', {
    method: 'PUT',
    headers: { 'content-type': 'application/octet-stream' },
    body: new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, ...randomBytes(120)]),
  });
  await send(github, '/github', {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-github-event': 'push', 'x-github-delivery': randomUUID() },
    body: JSON.stringify({ ref: 'refs/heads/main', repository: { full_name: 'acme/checkout' }, pusher: { name: 'ada' }, commits: [{ id: randomBytes(20).toString('hex'), message: 'Fix rounding of refunds' }] }),
  });

  await api('POST', '/subscriptions', {
    target_url: 'https://hooks.zapier.com/hooks/standard/4711/abcdef',
    event_types: ['incident.opened', 'incident.resolved'],
  }).catch((e) => log('subscription not created:', e.message));
  await api('POST', '/subscriptions', {
    target_url: 'https://hooks.slack.example.com/services/T000/B000/XXXX',
    event_types: ['request.forward_failed'],
    endpoint_id: stripe.id,
  }).catch((e) => log('subscription not created:', e.message));
  await api('POST', '/api-keys', {
    name: 'Zapier',
    access_mode: 'custom',
    scopes: ['endpoints:read', 'requests:read', 'destinations:read', 'incidents:read', 'subscriptions:read', 'subscriptions:write'],
  });
  await api('POST', '/api-keys', { name: 'CI deploys', access_mode: 'full' });
  await api('POST', '/members', { email: 'grace@acme.example', role: 'developer' });
  await api('POST', '/members', { email: 'linus@acme.example', role: 'viewer' });

  const requests = (await api('GET', `/endpoints/${stripe.id}/requests?limit=10`))?.data ?? [];
  const incident = await waitFor(async () => (await api('GET', '/incidents?limit=1')).data?.[0], 30_000);
  if (!incident) log('no incident opened within 30 s: the incident pages show an empty list');
  // the request shown selected: a JSON one, the common case
  const request = requests.find((r) => /json/.test(r.content_type ?? '')) ?? requests[0];
  return { stripe, request, incident, ingest };
}

/** Waits until the page has settled: a heading, and no "Loading…" left. */
async function settle(page) {
  await page.locator('h1').first().waitFor({ timeout: 15_000 });
  await page
    .waitForFunction(() => ![...document.querySelectorAll('[role=status]')].some((e) => /Loading/.test(e.textContent ?? '')), null, { timeout: 15_000 })
    .catch(() => undefined);
  await sleep(400);
}

async function main() {
  const dataDir = mkdtempSync(join(tmpdir(), 'weir-screens-'));
  const adminToken = randomBytes(24).toString('hex');
  const weir = await startWeir(dataDir, adminToken);
  let browser;
  try {
    log('weir at', weir.api, 'ingest', weir.ingest);
    const demo = await seed(weir, adminToken);
    mkdirSync(OUT, { recursive: true });
    browser = await chromium.launch({
      executablePath: '/usr/bin/chromium',
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
    const shots = [
      ['endpoints', '/endpoints'],
      ['endpoint-requests', demo.request ? `/endpoints/${demo.stripe.id}/requests/${demo.request.id}` : `/endpoints/${demo.stripe.id}`],
      ['destinations', '/destinations'],
      ['incidents', '/incidents'],
      ...(demo.incident ? [['incident', `/incidents/${demo.incident.id}`]] : []),
      ['agents', '/agents'],
      ['subscriptions', '/subscriptions'],
      ['usage', '/usage'],
      ['keys', '/keys'],
      ['members', '/members'],
    ].filter(([name]) => !ONLY || ONLY.has(name));
    const missing = new Set();
    for (const width of WIDTHS) {
      const context = await browser.newContext({ viewport: { width, height: width > 600 ? 860 : 844 }, deviceScaleFactor: 1 });
      const page = await context.newPage();
      page.on('pageerror', (e) => log(`page error at ${page.url()}: ${e.message}`));
      if (!ONLY || ONLY.has('signin')) {
        await page.goto(weir.api + '/');
        await page.getByLabel('API key').waitFor();
        await page.screenshot({ path: join(OUT, `signin-${width}.png`), fullPage: true });
      }
      await page.goto(weir.api + '/');
      await page.getByLabel('API key').fill(weir.key);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('navigation', { name: 'Main' }).waitFor();
      for (const [name, path] of shots) {
        if (missing.has(name)) continue;
        await page.goto(weir.api + path);
        await settle(page);
        const heading = await page.locator('h1').first().innerText();
        if (/did not load|not found/i.test(heading)) {
          log(`${name} (${path}): no page yet ("${heading}"), skipped`);
          missing.add(name);
          continue;
        }
        const file = join(OUT, `${name}-${width}.png`);
        await page.screenshot({ path: file, fullPage: true });
        log('saved', file);
      }
      await context.close();
    }
  } finally {
    await browser?.close();
    await weir.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
