import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { buildTestApp, call, type TestApp } from '../helpers/app.ts';
import { openTestDb, type TestDb } from '../helpers/db.ts';

describe('dashboard', () => {
  let t: TestDb;
  let a: TestApp;
  before(async () => {
    t = await openTestDb();
    a = await buildTestApp(t.db);
  });
  after(async () => {
    await a.close();
    await t.close();
  });

  it('serves the page at / under a CSP that allows only its own script', async () => {
    const { status, res } = await call(a.app, 'GET', '/');
    assert.equal(status, 200);
    assert.match(res.headers['content-type'] as string, /^text\/html/);
    assert.match(res.body, /<script type="module" src="\/dashboard\/app.js">/);
    const csp = res.headers['content-security-policy'] as string;
    assert.match(csp, /script-src 'self'/);
    assert.doesNotMatch(csp, /unsafe-inline/);
  });

  it('serves its script and stylesheet with their types', async () => {
    const js = await call(a.app, 'GET', '/dashboard/app.js');
    assert.equal(js.status, 200);
    assert.match(js.res.headers['content-type'] as string, /^text\/javascript/);
    assert.match(js.res.body, /fetch\('\/v1'/);
    const css = await call(a.app, 'GET', '/dashboard/app.css');
    assert.equal(css.status, 200);
    assert.match(css.res.headers['content-type'] as string, /^text\/css/);
  });

  it('never renders API text as HTML', async () => {
    const js = await call(a.app, 'GET', '/dashboard/app.js');
    assert.doesNotMatch(js.res.body, /innerHTML|outerHTML|insertAdjacentHTML|document\.write/);
  });

  it('answers unknown dashboard assets with the 404 envelope', async () => {
    const { status, json } = await call(a.app, 'GET', '/dashboard/nope.js');
    assert.equal(status, 404);
    assert.equal(json.error.code, 'not_found');
  });
});
