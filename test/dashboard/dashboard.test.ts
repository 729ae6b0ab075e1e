import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { PAGE_PREFIXES } from '../../src/dashboard/routes.ts';
import { call, useTestApp } from '../helpers/app.ts';

const PUBLIC = new URL('../../src/dashboard/public/', import.meta.url).pathname;

function scripts(dir = PUBLIC): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? scripts(path) : name.endsWith('.js') ? [path] : [];
  });
}

/** How the API listener serves the dashboard: the page, its modules, deep links, and the CSP. */
describe('dashboard assets', () => {
  const t = useTestApp({}, { reset: false });

  it('serves the page at / under a CSP that allows only its own scripts', async () => {
    const { status, res } = await call(t.app, 'GET', '/');
    assert.equal(status, 200);
    assert.match(res.headers['content-type'] as string, /^text\/html/);
    assert.match(res.body, /<script type="module" src="\/dashboard\/main.js">/);
    const csp = res.headers['content-security-policy'] as string;
    assert.match(csp, /script-src 'self'/);
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
  });

  it('answers the page for every deep link, so a link to a request or an incident can be reloaded', async () => {
    for (const prefix of PAGE_PREFIXES) {
      for (const path of [`/${prefix}`, `/${prefix}/`, `/${prefix}/0b8f7a52-1d7c-4a8e-9d51-3f4c2a9e6b10/requests/x`]) {
        const { status, res } = await call(t.app, 'GET', path);
        assert.equal(status, 200, path);
        assert.match(res.body, /src="\/dashboard\/main.js"/, path);
      }
    }
  });

  it('serves every module under public/ and the framework, as JavaScript', async () => {
    for (const file of scripts()) {
      const url = '/dashboard/' + file.slice(PUBLIC.length);
      const { status, res } = await call(t.app, 'GET', url);
      assert.equal(status, 200, url);
      assert.match(res.headers['content-type'] as string, /^text\/javascript/, url);
    }
    const vendor = await call(t.app, 'GET', '/dashboard/vendor/preact.js');
    assert.equal(vendor.status, 200);
    assert.match(vendor.res.body, /export\{[^}]*as html[^}]*as render/);
    const css = await call(t.app, 'GET', '/dashboard/app.css');
    assert.match(css.res.headers['content-type'] as string, /^text\/css/);
  });

  it('never renders API text as HTML', () => {
    for (const file of scripts()) {
      assert.doesNotMatch(readFileSync(file, 'utf8'), /innerHTML|outerHTML|insertAdjacentHTML|document\.write|dangerouslySetInnerHTML/, file);
    }
  });

  it('leaves the API, the operator API and unknown paths to their own answers', async () => {
    assert.equal((await call(t.app, 'GET', '/v1/endpoints')).json.error.code, 'unauthorized');
    const missing = await call(t.app, 'GET', '/dashboard/nope.js');
    assert.equal(missing.status, 404);
    assert.equal(missing.json.error.code, 'not_found');
    assert.equal((await call(t.app, 'GET', '/nowhere')).status, 404);
  });
});
