import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { newId } from '../../src/db/ids.ts';
import { addMemberWithKey, call, seedOrg, useTestApp } from '../helpers/app.ts';
import { insertEndpoint, insertForwardDestination } from '../helpers/fixtures.ts';
import { assertErrorEnvelope } from '../http/envelope.ts';
import { seedIncident } from '../incidents/helpers.ts';

// Issue 23, defect 4: a destination URL with user:password@ was accepted and
// shown to every role. Every target URL now refuses credentials (one rule,
// src/delivery/target-url.ts), and migration 0011 strips stored ones.

const t = useTestApp({}, { reset: false });

const WITH_CREDENTIALS = ['https://user:s3cretpw@example.com/hook', 'https://user@example.com/hook', 'https://:pw@example.com/hook'];

describe('credentials in target URLs', () => {
  it('refuses them in a destination url at creation and on PATCH, like forward_url and target_url (400)', async () => {
    const { key } = await seedOrg(t.db);
    const ep = (await call(t.app, 'POST', '/v1/endpoints', { key, body: { name: 'ep' } })).json.data;
    const dest = (await call(t.app, 'POST', '/v1/destinations', { key, body: { name: 'd', url: 'https://example.com/hook' } })).json.data;
    for (const url of WITH_CREDENTIALS) {
      for (const [method, path, body] of [
        ['POST', '/v1/destinations', { name: 'x', url }],
        ['POST', '/v1/destinations', { name: 'x', url, endpoint_id: ep.id }],
        ['PATCH', `/v1/destinations/${dest.id}`, { url }],
        ['POST', '/v1/endpoints', { name: 'x', forward_url: url }],
        ['POST', '/v1/subscriptions', { target_url: url, event_types: ['request.captured'] }],
      ] as const) {
        const res = await call(t.app, method, path, { key, body });
        assertErrorEnvelope(res, 400, 'bad_request');
        assert.match(res.json.error.message, /credentials|not allowed/, `${method} ${path} ${url}`);
      }
    }
    const list = await call(t.app, 'GET', '/v1/destinations', { key });
    assert.deepEqual(list.json.data.data.map((d: { url: string }) => d.url), ['https://example.com/hook']);
  });

  it('still accepts an @ in the path or query, which is not a credential', async () => {
    const { key } = await seedOrg(t.db);
    const res = await call(t.app, 'POST', '/v1/destinations', { key, body: { name: 'at', url: 'https://example.com/hooks/@team?to=a@b.c' } });
    assert.equal(res.status, 201, JSON.stringify(res.json));
  });
});

describe('migration 0011 on rows stored before the rule', () => {
  it('strips the userinfo from every stored copy, leaves other URLs alone, and audits each destination it changed', async () => {
    const { org, key } = await seedOrg(t.db);
    const viewer = await addMemberWithKey(t.db, org.id, 'viewer');
    const endpoint = await insertEndpoint(t.db, org.id);
    const savedId = newId();
    await t.db.query(`insert into destinations (id, organization_id, name, url) values ($1::uuid, $2::uuid, 'old', 'https://user:s3cretpw@example.com/a@b?x=@')`, [savedId, org.id]);
    const clean = await insertForwardDestination(t.db, endpoint, { url: 'https://example.com/clean@path' });
    const inc = await seedIncident(t.db, org.id, { n: 1, url: 'https://ops:hunter2@example.com/hook' });

    const sql = readFileSync(new URL('../../src/db/migrations/0011_destination_url_credentials.sql', import.meta.url), 'utf8');
    await t.db.exec(sql);

    const urls = await t.db.query<{ url: string }>(
      `select url from destinations union all select url from forward_destinations union all select url from deliveries
       union all select destination_url from incident_failures union all select destination_url from incidents where destination_url is not null`,
    );
    for (const { url } of urls.rows) assert.doesNotMatch(url, /s3cretpw|hunter2|user:|ops:/, url);
    const saved = await t.db.query<{ url: string }>(`select url from destinations where id = $1::uuid`, [savedId]);
    assert.equal(saved.rows[0].url, 'https://example.com/a@b?x=@');
    const untouched = await t.db.query<{ url: string }>(`select url from forward_destinations where id = $1::uuid`, [clean.id]);
    assert.equal(untouched.rows[0].url, 'https://example.com/clean@path');

    const audit = await call(t.app, 'GET', '/v1/audit-log?limit=100', { key });
    const removed = audit.json.data.data.filter((e: { action: string }) => e.action === 'destination.credentials_removed');
    assert.deepEqual(removed.map((e: { target_id: string }) => e.target_id).sort(), [savedId, inc.destinationId].sort());
    assert.ok(removed.every((e: { actor_type: string }) => e.actor_type === 'system'));

    // what a viewer reads afterwards carries no password
    const seen = JSON.stringify([
      (await call(t.app, 'GET', '/v1/destinations', { key: viewer.key })).json,
      (await call(t.app, 'GET', `/v1/incidents/${inc.incidentId}`, { key: viewer.key })).json,
      (await call(t.app, 'GET', '/v1/incidents/recent', { key: viewer.key })).json,
      (await call(t.app, 'GET', `/v1/requests/${inc.requestIds[0]}/forwards`, { key: viewer.key })).json,
    ]);
    assert.doesNotMatch(seen, /s3cretpw|hunter2/);
    assert.match(seen, /example\.com/);
  });
});
