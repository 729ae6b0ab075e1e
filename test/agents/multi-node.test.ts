import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Db } from '../../src/db/db.ts';
import { openPostgres } from '../../src/db/postgres.ts';
import { waitUntil } from '../delivery/helpers.ts';
import { createFreshDatabase, onPostgres } from '../helpers/db.ts';
import { http, startWeirProcess, type WeirProcess } from '../helpers/weir-process.ts';
import { agentDestination, capture, roomyPlans, useAgentsAndServers, type AgentProcess } from './helpers.ts';

describe('agents with two Weir nodes on one PostgreSQL', { skip: onPostgres ? false : 'needs PostgreSQL: several processes share one database' }, () => {
  let url: string;
  let drop: () => Promise<void>;
  let db: Db;
  let a: WeirProcess;
  let b: WeirProcess;
  let key: string;
  const run = useAgentsAndServers();

  before(async () => {
    ({ url, drop } = await createFreshDatabase());
    a = await startWeirProcess({ DATABASE_URL: url, WEIR_PLANS: roomyPlans() });
    b = await startWeirProcess({ DATABASE_URL: url, WEIR_PLANS: roomyPlans() });
    key = a.bootstrapKey!;
    db = await openPostgres(url, { poolSize: 2 });
  });
  after(async () => {
    await Promise.all([a?.stop('SIGKILL'), b?.stop('SIGKILL')]);
    await db?.close();
    await drop?.();
  });

  const agent = (node: WeirProcess, token: string) => run.agent(node.base, token);
  const hello = (x: AgentProcess) => x.waitForEvent((e) => e.event === 'connected', 'the agent to connect');
  const attemptNodes = async (requestId: string) =>
    (await db.query<{ node: string }>(`select t.node from delivery_attempts t join deliveries d on d.id = t.delivery_id where d.request_id = $1::uuid`, [requestId])).rows.map((r) => r.node);
  const succeeded = (requestId: string) =>
    waitUntil(async () => (await db.query(`select 1 from deliveries where request_id = $1::uuid and status = 'succeeded'`, [requestId])).rows.length === 1, `delivery of ${requestId}`);

  it('the node holding the socket delivers what another node captured, and any node reports where the agent is', async () => {
    const rx = await run.local();
    const setup = await agentDestination(a, key, { port: rx.port });
    const x = agent(a, setup.token);
    const { node } = await hello(x);
    const id = await capture(b.ingestPort, setup.slug, { body: '{"via":"b"}' });
    const [got] = await rx.waitFor(1);
    assert.equal(got.body.toString(), '{"via":"b"}');
    await succeeded(id);
    assert.deepEqual(await attemptNodes(id), [node], 'node A, which holds the socket, made the attempt');
    const seenFromB = (await http(b.base, 'GET', `/v1/agents/${setup.agentId}`, { token: key })).json.data;
    assert.equal(seenFromB.status, 'connected');
    assert.equal(seenFromB.node, node);
  });

  it('an agent that comes back on the other node continues there, in order, the interrupted forward first', async () => {
    let hung = false;
    const rx = await run.local({ reply: (r) => (r.body.toString() === '{"n":1}' && !hung ? ((hung = true), 'hang') : {}) });
    const setup = await agentDestination(a, key, { port: rx.port });
    const onA = agent(a, setup.token);
    const helloA = await hello(onA);
    const ids = [await capture(b.ingestPort, setup.slug, { body: '{"n":0}' })];
    await rx.waitFor(1);
    ids.push(await capture(b.ingestPort, setup.slug, { body: '{"n":1}' }));
    await rx.waitFor(2);
    onA.child.kill('SIGKILL');
    await onA.exited;
    for (let n = 2; n < 5; n++) ids.push(await capture(a.ingestPort, setup.slug, { body: `{"n":${n}}` }));

    const onB = agent(b, setup.token);
    const helloB = await hello(onB);
    assert.notEqual(helloB.node, helloA.node);
    for (const id of ids) await succeeded(id);
    assert.deepEqual(rx.received.map((r) => r.body.toString()), ['{"n":0}', '{"n":1}', '{"n":1}', '{"n":2}', '{"n":3}', '{"n":4}']);
    for (const id of ids.slice(1)) assert.deepEqual(await attemptNodes(id), [helloB.node]);
  });

  it('revoking through one node closes the link held by the other', async () => {
    const rx = await run.local();
    const setup = await agentDestination(a, key, { port: rx.port });
    const x = agent(a, setup.token);
    await hello(x);
    assert.equal((await http(b.base, 'DELETE', `/v1/agents/${setup.agentId}`, { token: key })).status, 204);
    assert.equal(await x.exited, 1);
  });
});
