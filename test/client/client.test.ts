import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { AddressInfo } from 'node:net';
import { allPages, createWeirClient, unwrap, WeirApiError, type WeirEvent } from '../../src/client/index.ts';
import { seedOrg, useTestApp } from '../helpers/app.ts';
import { insertCaptures } from '../helpers/fixtures.ts';

/**
 * weir/client (src/client) against the real API on a loopback port: typed
 * calls, the envelope unwrapped, errors as WeirApiError, paging followed.
 */
describe('weir/client', () => {
  const t = useTestApp({}, { reset: false });
  let baseUrl: string;
  before(async () => {
    await t.app.listen({ host: '127.0.0.1', port: 0 });
    baseUrl = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  });
  after(() => t.app.close());

  it('creates, lists and reads through the generated types, and follows pages', async () => {
    const s = await seedOrg(t.db);
    const weir = createWeirClient({ baseUrl: baseUrl + '/', apiKey: s.key });
    const endpoint = await unwrap(weir.POST('/v1/endpoints', { body: { name: 'stripe-prod' } }));
    assert.equal(endpoint.name, 'stripe-prod');
    assert.match(endpoint.ingest_url, /\/h\//);
    const listed = await unwrap(weir.GET('/v1/endpoints'));
    assert.deepEqual(
      listed.map((e) => e.id),
      [endpoint.id],
    );
    const stored = await insertCaptures(t.db, { id: endpoint.id, organization_id: s.org.id }, [{ body: 'a' }, { body: 'b' }, { body: 'c' }]);
    let pages = 0;
    const captures = await allPages((before) => {
      pages++;
      return weir.GET('/v1/endpoints/{id}/requests', { params: { path: { id: endpoint.id }, query: { limit: 2, before } } });
    });
    assert.equal(pages, 2);
    assert.deepEqual(captures.map((c) => c.id).sort(), stored.map((c) => c.id).sort());
    const one = await unwrap(weir.GET('/v1/requests/{id}', { params: { path: { id: stored[0].id } } }));
    assert.equal(Buffer.from(one.body, one.body_encoding === 'base64' ? 'base64' : 'utf8').toString(), 'a');
    assert.equal(await unwrap(weir.DELETE('/v1/endpoints/{id}', { params: { path: { id: endpoint.id } } })), undefined);
  });

  it('throws WeirApiError with the envelope of an error answer, and status 0 when nothing answers', async () => {
    const s = await seedOrg(t.db);
    const weir = createWeirClient({ baseUrl, apiKey: s.key });
    const missing = await unwrap(weir.GET('/v1/endpoints/{id}', { params: { path: { id: '00000000-0000-7000-8000-000000000000' } } })).catch((e) => e);
    assert.ok(missing instanceof WeirApiError);
    assert.deepEqual([missing.status, missing.code], [404, 'not_found']);
    const bad = await unwrap(weir.POST('/v1/endpoints', { body: { name: '' } })).catch((e) => e);
    assert.deepEqual([bad.status, bad.code], [400, 'bad_request']);
    const wrongKey = await unwrap(createWeirClient({ baseUrl, apiKey: 'wr_live_nope' }).GET('/v1/me')).catch((e) => e);
    assert.deepEqual([wrongKey.status, wrongKey.code], [401, 'unauthorized']);
    const closed = await unwrap(createWeirClient({ baseUrl: 'http://127.0.0.1:1', apiKey: s.key }).GET('/v1/me')).catch((e) => e);
    assert.ok(closed instanceof WeirApiError);
    assert.deepEqual([closed.status, closed.code], [0, 'unreachable']);
  });

  it('types event bodies from the webhooks section', () => {
    const opened: WeirEvent<'incident.opened'>['data']['object']['status'] = 'open';
    assert.equal(opened, 'open');
  });

  it('is exported as weir/client, from the built package', () => {
    assert.match(import.meta.resolve('weir/client'), /\/dist\/client\/index\.js$/);
  });
});
