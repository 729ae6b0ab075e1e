import assert from 'node:assert/strict';
import { after, afterEach, before, describe, it } from 'node:test';
import { WebSocket } from 'ws';
import { AGENT_PATH, decodeFrame, encodeFrame, PROTOCOL_VERSION, type DeliverMessage } from '../../src/agents/protocol.ts';
import { waitUntil } from '../delivery/helpers.ts';
import { freshStore, http, startWeirProcess, type Store, type WeirProcess } from '../helpers/weir-process.ts';
import { agentDestination, capture, roomyPlans, startAgent, type AgentProcess, useAgentsAndServers } from './helpers.ts';

/**
 * Deliveries that would otherwise wait forever or loop, with the real
 * `weir agent` CLI against a real `weir serve`: a revoked agent's queue, a
 * body larger than the agent's frame limit, and an agent whose clock (or
 * honesty) is off.
 */
describe('agent deliveries with a clear end', () => {
  let store: Store;
  let weir: WeirProcess;
  let key: string;
  const run = useAgentsAndServers();
  const extra: AgentProcess[] = [];

  before(async () => {
    store = await freshStore();
    // generous: the machine running the suite may be busy
    weir = await startWeirProcess({ ...store.env, WEIR_PLANS: roomyPlans() }, 180_000);
    key = weir.bootstrapKey!;
  });
  afterEach(async () => {
    for (const a of extra.splice(0)) {
      a.child.kill('SIGKILL');
      await a.exited;
    }
  });
  after(async () => {
    await weir?.stop('SIGKILL');
    await store?.drop();
  });

  const forwards = async (requestId: string) => (await http(weir.base, 'GET', `/v1/requests/${requestId}/forwards`, { token: key })).json.data.data;
  const connected = (a: AgentProcess) => a.waitForEvent((e) => e.event === 'connected', 'the agent to connect');

  it("fails a revoked agent's waiting deliveries, counts them in an incident, and lets them be replayed to another destination", async () => {
    const rx = await run.local();
    const setup = await agentDestination(weir, key, { port: rx.port });
    // captured while the agent never connected: they wait for it
    const ids = [await capture(weir.ingestPort, setup.slug), await capture(weir.ingestPort, setup.slug)];
    for (const id of ids) assert.equal((await forwards(id))[0].status, 'pending');

    assert.equal((await http(weir.base, 'DELETE', `/v1/agents/${setup.agentId}`, { token: key })).status, 204);
    for (const id of ids) {
      const [f] = await forwards(id);
      assert.equal(f.status, 'failed');
      assert.match(f.last_error, /^the agent was revoked/);
    }
    const incident = await waitUntil(async () => {
      const list = (await http(weir.base, 'GET', '/v1/incidents', { token: key })).json.data.data;
      return list.find((i: any) => i.destination_id === setup.destinationId && i.failure_count === 2);
    }, 'an incident counting both failures');
    assert.equal(incident.status, 'open');

    // a capture queued after the revocation, through the destination that still names the agent, ends too (the gateway's sweep)
    const late = await capture(weir.ingestPort, setup.slug);
    await waitUntil(async () => ((await forwards(late))[0].status === 'failed' ? true : undefined), 'the late delivery to fail', 60_000);

    // another agent on the same endpoint takes the replay
    const other = await run.local();
    const agent2 = (await http(weir.base, 'POST', '/v1/agents', { token: key, body: { name: 'desktop', environment: 'production' } })).json.data;
    const dest2 = await http(weir.base, 'POST', '/v1/destinations', {
      token: key,
      body: { name: 'desktop', destination_type: 'agent', endpoint_id: setup.endpointId, agent_id: agent2.id, target_port: other.port, target_path: '/again' },
    });
    assert.equal(dest2.status, 201);
    await connected(run.agent(weir.base, agent2.token));
    const replay = await http(weir.base, 'POST', `/v1/requests/${ids[0]}/replay`, { token: key, body: { destination_id: dest2.json.data.id } });
    assert.equal(replay.status, 202, JSON.stringify(replay.json));
    const [got] = await other.waitFor(1);
    assert.equal(got.url, '/again');
  });

  it("refuses a body larger than the agent's frame limit for that delivery alone, and the link stays up", async () => {
    const rx = await run.local();
    const setup = await agentDestination(weir, key, { port: rx.port });
    // this agent accepts 1 MiB bodies; the server captures up to 10 MiB
    const a = startAgent(weir.base, setup.token, { WEIR_MAX_BODY_BYTES: String(1024 * 1024) });
    extra.push(a);
    await connected(a);
    const big = await capture(weir.ingestPort, setup.slug, { headers: ['content-type', 'application/octet-stream'], body: Buffer.alloc(2 * 1024 * 1024, 7) });
    const f = await waitUntil(async () => {
      const [x] = await forwards(big);
      return x.status === 'failed' ? x : undefined;
    }, 'the oversized delivery to fail');
    assert.match(f.last_error, /does not fit the agent link's frame limit of \d+ bytes; raise WEIR_MAX_BODY_BYTES where the agent runs/);
    assert.equal(f.attempts.length, 1);
    assert.equal(f.attempts[0].error_class, 'invalid_request');

    const small = await capture(weir.ingestPort, setup.slug, { body: '{"small":true}' });
    await waitUntil(async () => ((await forwards(small))[0].status === 'succeeded' ? true : undefined), 'the next delivery over the same link');
    assert.equal(rx.received.length, 1, 'only the small one reached the local server');
    assert.equal(a.events.filter((e) => e.event === 'reconnected' || e.event === 'disconnected').length, 0, 'the link never dropped');
  });

  it("clamps an agent's reported started_at and duration to the server's window for the attempt", async () => {
    const setup = await agentDestination(weir, key, { port: 9 });
    // an agent speaking the protocol by hand, whose clock says 1999
    const url = weir.base.replace('http:', 'ws:') + AGENT_PATH;
    const ws = new WebSocket(url, { headers: { authorization: `Bearer ${setup.token}`, 'x-weir-agent-protocol': String(PROTOCOL_VERSION), 'x-weir-agent-version': 'test' } });
    const hello = new Promise<void>((resolve, reject) => {
      ws.once('error', reject);
      ws.once('message', () => resolve());
    });
    await hello;
    ws.on('message', (data: Buffer) => {
      const { header } = decodeFrame(data);
      const m = header as DeliverMessage;
      if (m.type !== 'deliver') return;
      ws.send(encodeFrame({ type: 'result', id: m.id, started_at: '1999-01-01T00:00:00.000Z', duration_ms: 1e12, status_code: 200, headers: [] }, Buffer.alloc(0)));
    });
    try {
      const before = Date.now();
      const id = await capture(weir.ingestPort, setup.slug);
      const f = await waitUntil(async () => {
        const [x] = await forwards(id);
        return x.status === 'succeeded' ? x : undefined;
      }, 'the hand-made agent to answer');
      const after = Date.now();
      const started = Date.parse(f.attempts[0].started_at);
      assert.ok(started >= before - 1_000 && started <= after, `started_at ${f.attempts[0].started_at} within the attempt's window`);
      assert.ok(f.attempts[0].duration_ms <= after - before + 1_000, `duration ${f.attempts[0].duration_ms} ms within the window`);
    } finally {
      ws.close();
    }
  });
});
