import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { freshStore, http, runWeirToEnd, cleanEnv, startWeirProcess, type Store, type WeirProcess } from '../helpers/weir-process.ts';

const METRICS_TOKEN = 'metrics-token-0123456789';

describe('metrics on their own port (WEIR_METRICS_PORT)', () => {
  let store: Store;
  let weir: WeirProcess;

  before(async () => {
    store = await freshStore();
    weir = await startWeirProcess({ ...store.env, WEIR_METRICS_PORT: '0', WEIR_METRICS_TOKEN: METRICS_TOKEN });
  });
  after(async () => {
    await weir?.stop('SIGKILL');
    await store?.drop();
  });

  const metricsUrl = (path = '/metrics') => `http://127.0.0.1:${weir.metricsPort}${path}`;

  it('binds a free port for 0 and prints it beside the others', () => {
    assert.ok(weir.metricsPort && weir.metricsPort !== weir.apiPort && weir.metricsPort !== weir.ingestPort, weir.stdout());
    assert.match(weir.stdout(), new RegExp(`Metrics: +http://127\\.0\\.0\\.1:${weir.metricsPort}/metrics +\\(port ${weir.metricsPort}\\)`));
  });

  it('serves the node registry there, counting what the other listeners did', async () => {
    const ep = await http(weir.base, 'POST', '/v1/endpoints', { token: weir.bootstrapKey, body: { name: 'metered' } });
    const res = await fetch(`http://127.0.0.1:${weir.ingestPort}/h/${ep.json.data.slug}`, { method: 'POST', body: '{}' });
    assert.equal(res.status, 200);
    const scrape = await fetch(metricsUrl(), { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
    assert.equal(scrape.status, 200);
    assert.match(scrape.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
    const text = await scrape.text();
    assert.match(text, /^weir_captures_acknowledged_total 1$/m);
    assert.match(text, /^process_cpu_user_seconds_total /m);
  });

  it('still requires the token there, and answers anything else in the error envelope', async () => {
    for (const [init, path, status, code] of [
      [{}, '/metrics', 401, 'unauthorized'],
      [{ headers: { authorization: 'Bearer wrong-token-0123456789' } }, '/metrics', 401, 'unauthorized'],
      [{}, '/', 404, 'not_found'],
      [{ method: 'POST', headers: { authorization: `Bearer ${METRICS_TOKEN}` } }, '/metrics', 405, 'method_not_allowed'],
    ] as const) {
      const res = await fetch(metricsUrl(path), init);
      assert.equal(res.status, status, path);
      assert.equal(((await res.json()) as any).error.code, code);
    }
  });

  it('is no longer on the API listener', async () => {
    const res = await fetch(`${weir.base}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
    assert.equal(res.status, 404);
    assert.match(((await res.json()) as any).error.message, /WEIR_METRICS_PORT/);
  });

  it('refuses to start on a bad WEIR_METRICS_PORT, naming the variable', async () => {
    const r = await runWeirToEnd(['serve'], cleanEnv({ ...store.env, WEIR_METRICS_PORT: 'prometheus' }));
    assert.equal(r.code, 2);
    assert.match(r.stderr, /WEIR_METRICS_PORT must be a port number 0-65535, got "prometheus"/);
  });
});
