import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import { Authenticator } from '../../src/auth/authenticate.ts';
import { buildApp } from '../../src/http/app.ts';
import { routeModules } from '../../src/routes.ts';
import { seedOrg, testConfig } from '../helpers/app.ts';
import { openTestDb, type TestDb } from '../helpers/db.ts';

/** An open dashboard tab must not flood the info log; what an operator needs stays at info. */
describe('request logging', () => {
  let t: TestDb;
  let authenticator: Authenticator;
  const lines: Array<{ level: number; msg: string; req?: { url: string }; reqId: string }> = [];
  let app: Awaited<ReturnType<typeof buildApp>>;
  before(async () => {
    t = await openTestDb();
    authenticator = new Authenticator(t.db);
    await authenticator.start();
    const sink = new Writable({
      write(chunk, _enc, done) {
        for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
        done();
      },
    });
    app = await buildApp(
      { db: t.db, config: testConfig(), authenticator, logger: pino({ level: 'debug' }, sink), urls: { publicUrl: 'http://api.test', ingestUrl: 'http://ingest.test' } },
      routeModules,
    );
    await app.ready();
  });
  after(async () => {
    await app.close();
    await authenticator.stop();
    await t.close();
  });

  function linesOf(reqId: string) {
    return lines.filter((l) => l.reqId === reqId).map((l) => `${l.level} ${l.msg}`);
  }

  it('logs the dashboard files and its reads at debug, not at info', async () => {
    const s = await seedOrg(t.db);
    const page = await app.inject({ method: 'GET', url: '/endpoints/abc' });
    const file = await app.inject({ method: 'GET', url: '/dashboard/main.js' });
    const read = await app.inject({ method: 'GET', url: '/v1/endpoints', headers: { authorization: `Bearer ${s.key}`, 'x-weir-client': 'dashboard' } });
    assert.deepEqual([page.statusCode, file.statusCode, read.statusCode], [200, 200, 200]);
    for (const res of [page, file, read]) assert.deepEqual(linesOf(res.headers['x-request-id'] as string), ['20 incoming request', '20 request completed']);
  });

  it('keeps every change, even from the dashboard, and every other client at info', async () => {
    const s = await seedOrg(t.db);
    const change = await app.inject({
      method: 'POST',
      url: '/v1/endpoints',
      headers: { authorization: `Bearer ${s.key}`, 'x-weir-client': 'dashboard', 'content-type': 'application/json' },
      payload: JSON.stringify({ name: 'logged' }),
    });
    const curl = await app.inject({ method: 'GET', url: '/v1/endpoints', headers: { authorization: `Bearer ${s.key}` } });
    assert.deepEqual([change.statusCode, curl.statusCode], [201, 200]);
    assert.deepEqual(linesOf(change.headers['x-request-id'] as string), ['30 incoming request', '30 request completed']);
    assert.deepEqual(linesOf(curl.headers['x-request-id'] as string), ['30 incoming request', '30 request completed']);
  });
});
