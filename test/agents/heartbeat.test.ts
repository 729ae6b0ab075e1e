import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { WebSocketServer } from 'ws';
import { AGENT_PATH, encodeFrame, LINK_TIMEOUT_MS, type HelloMessage } from '../../src/agents/protocol.ts';
import { waitUntil } from '../delivery/helpers.ts';
import { freshStore, http, startWeirProcess, type Store, type WeirProcess } from '../helpers/weir-process.ts';
import { agentDestination, capture, roomyPlans, startAgent, startLocalServer } from './helpers.ts';

/** A half-open link (one side frozen or gone without a FIN) is noticed by the other side, which moves on. */
describe('half-open links', () => {
  let store: Store;
  let weir: WeirProcess;
  before(async () => {
    store = await freshStore();
    weir = await startWeirProcess({ ...store.env, WEIR_PLANS: roomyPlans() });
  });
  after(async () => {
    await weir?.stop('SIGKILL');
    await store?.drop();
  });

  it('the gateway notices a frozen agent, gives its delivery back, and the agent resumes when it thaws', async () => {
    let first = true;
    const rx = await startLocalServer({ reply: () => (first ? ((first = false), 'hang') : {}) });
    const setup = await agentDestination(weir, weir.bootstrapKey!, { port: rx.port });
    const agent = startAgent(weir.base, setup.token);
    try {
      await agent.waitForEvent((e) => e.event === 'connected', 'the agent to connect');
      const id = await capture(weir.ingestPort, setup.slug);
      await rx.waitFor(1);
      agent.child.kill('SIGSTOP');
      const status = async () => (await http(weir.base, 'GET', `/v1/requests/${id}/forwards`, { token: weir.bootstrapKey! })).json.data.data[0].status;
      await waitUntil(async () => (await status()) === 'pending', 'the frozen link to be dropped and its delivery released', LINK_TIMEOUT_MS * 3);
      agent.child.kill('SIGCONT');
      await agent.waitForEvent((e) => e.event === 'reconnected', 'the agent to reconnect', LINK_TIMEOUT_MS * 3);
      await waitUntil(async () => (await status()) === 'succeeded', 'the delivery to arrive again');
      assert.equal(rx.received.length, 2);
    } finally {
      agent.child.kill('SIGKILL');
      await agent.exited;
      await rx.close();
    }
  });

  it('the agent notices a server that went silent and reconnects', async () => {
    const wss = new WebSocketServer({ port: 0, host: '127.0.0.1', path: AGENT_PATH });
    await new Promise((r) => wss.once('listening', r));
    let connections = 0;
    wss.on('connection', (ws) => {
      connections++;
      const hello: HelloMessage = { type: 'hello', agent_id: 'a', agent_name: 'test', environment: 'development', node: 'silent', forward_timeout_ms: 5_000, max_in_flight: 8, targets: [] };
      ws.send(encodeFrame(hello)); // then never a ping nor a frame again
    });
    const agent = startAgent(`http://127.0.0.1:${(wss.address() as AddressInfo).port}`, 'wr_agent_' + 'C'.repeat(43));
    try {
      const gone = await agent.waitForEvent((e) => e.event === 'disconnected', 'the agent to give up on the silent link', LINK_TIMEOUT_MS * 3);
      assert.match(gone.reason, /no word from the server/);
      await waitUntil(async () => connections >= 2, 'a new connection', LINK_TIMEOUT_MS * 3);
    } finally {
      agent.child.kill('SIGKILL');
      await agent.exited;
      wss.close();
    }
  });
});
