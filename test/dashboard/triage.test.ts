import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { correlateAll } from '../../src/incidents/correlate.ts';
import { call, seedOrg, type Seeded } from '../helpers/app.ts';
import { openDashboardPage, seriousA11yViolations, signIn, useDashboard } from '../helpers/browser.ts';
import { insertCaptures, insertEndpoint, insertForwardDestination } from '../helpers/fixtures.ts';

const LONG = { timeout: 20_000 };

/** Issue 28 item 5, small items: an agent endpoint's destinations, the failures' Status column, an agent incident's network, short ids. */
describe('dashboard: triage at a glance', () => {
  const t = useDashboard();
  let s: Seeded;
  before(async () => {
    s = await seedOrg(t.db);
  });

  it("lists an agent endpoint's destinations, and an agent incident names the agent, each failure's status and the distinguishing end of its request id", async () => {
    const agent = (await call(t.app, 'POST', '/v1/agents', { key: s.key, body: { name: 'alice-laptop', environment: 'development' } })).json.data;
    const ep = await insertEndpoint(t.db, s.org.id, { name: 'via-agent' });
    const fd = await insertForwardDestination(t.db, ep, { name: 'local-app', agentId: agent.id, targetPort: 3000, targetPath: '/webhooks' });
    const caps = await insertCaptures(t.db, ep, [{ body: '{"a":1}' }, { body: '{"a":2}' }]);
    // as the completion statement records a development agent's refused connection (no retry), and one still retrying
    await t.db.query(`update deliveries set status = 'failed', attempt_count = 1 where forward_destination_id = $1::uuid`, [fd.id]);
    await t.db.query(
      `insert into incident_failures (id, organization_id, delivery_id, request_id, request_received_at, endpoint_id, forward_destination_id,
                                      destination_type, agent_id, scope_key, destination_url, status_code, error_class, error, next_attempt_at)
       select gen_random_uuid(), d.organization_id, d.id, d.request_id, d.request_received_at, d.endpoint_id, d.forward_destination_id,
              'agent', d.agent_id, 'fd:' || d.forward_destination_id::text, 'agent://' || d.agent_id::text, null, 'connection_refused', 'connection refused',
              case when d.request_id = $2::uuid then now() + interval '5 minutes' end
         from deliveries d where d.forward_destination_id = $1::uuid`,
      [fd.id, caps[1].id],
    );
    await correlateAll(t.db);
    const incidentId = (await t.db.query<{ id: string }>(`select id from incidents where scope_key = $1`, [`fd:${fd.id}`])).rows[0].id;

    const { page, errors } = await openDashboardPage(t.browser);
    await signIn(page, t.base, s.key, '/endpoints');
    const row = page.locator('tr', { has: page.getByRole('link', { name: 'via-agent' }) });
    await row.getByText('local-app').waitFor(LONG);
    assert.match((await row.locator('td[data-label="Forwards to"]').textContent()) ?? '', /local-app \(agent → 127\.0\.0\.1:3000\/webhooks\)/);

    await page.goto(`${t.base}/incidents/${incidentId}`);
    await page.locator('#inc-network').getByText('alice-laptop').waitFor(LONG);
    assert.match((await page.locator('#inc-network').textContent()) ?? '', /An agent on a laptop or private machine: alice-laptop/);
    assert.equal(await page.getByText('unknown ASN').count(), 0);
    const statuses = await page.locator('#inc-failures td[data-label="Status"]').allTextContents();
    assert.deepEqual(statuses.map((x) => x.replace(/\s+/g, ' ').trim().split(' ')[0]).sort(), ['failed', 'retrying']);
    assert.ok(statuses.every((x) => /connection refused/.test(x)), 'the class of a failure with no HTTP answer');
    const ids = await page.locator('#inc-failures td[data-label="Request"] code').allTextContents();
    assert.deepEqual(ids.sort(), caps.map((c) => '…' + c.id.slice(-8)).sort(), 'the random tail of each UUIDv7, not the shared time prefix');
    assert.deepEqual(await seriousA11yViolations(page), []);
    assert.deepEqual(errors, []);
    await page.close();
  });
});
