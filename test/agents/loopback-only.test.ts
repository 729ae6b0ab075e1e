import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { WebSocketServer, type WebSocket } from 'ws';
import { AGENT_PATH, decodeFrame, encodeFrame, frameBytes, type DeliverMessage, type HelloMessage, type ResultMessage } from '../../src/agents/protocol.ts';
import { startAgent, startLocalServer, type AgentProcess, type LocalServer } from './helpers.ts';

/**
 * Whatever a server sends, the agent connects only to its own loopback. A
 * gateway of our own (speaking the real protocol) plays a compromised or
 * buggy server: it names other hosts every way it can, while a server on
 * another address (127.0.0.2, still this machine but not the agent's
 * loopback target) counts what reaches it.
 */
describe('the agent refuses every target but its loopback', () => {
  let wss: WebSocketServer;
  let port: number;
  let socket: WebSocket;
  let connected: Promise<WebSocket>;
  let agent: AgentProcess;
  let elsewhere: LocalServer;
  let home: LocalServer;
  const results = new Map<string, ResultMessage>();
  let resultWaiters: Array<() => void> = [];

  before(async () => {
    elsewhere = await startLocalServer({ host: '127.0.0.2' });
    home = await startLocalServer();
    wss = new WebSocketServer({ port: 0, host: '127.0.0.1', path: AGENT_PATH });
    await new Promise((r) => wss.once('listening', r));
    port = (wss.address() as AddressInfo).port;
    connected = new Promise((resolve) =>
      wss.once('connection', (ws) => {
        ws.on('message', (data) => {
          const { header } = decodeFrame<ResultMessage>(frameBytes(data as Buffer));
          if (header.type !== 'result') return;
          results.set(header.id, header);
          for (const w of resultWaiters) w();
        });
        const hello: HelloMessage = { type: 'hello', agent_id: 'a', agent_name: 'test', environment: 'development', node: 'fake', forward_timeout_ms: 5_000, max_in_flight: 8, targets: [] };
        ws.send(encodeFrame(hello));
        resolve(ws);
      }),
    );
    agent = startAgent(`http://127.0.0.1:${port}`, 'wr_agent_' + 'B'.repeat(43));
    socket = await connected;
  });
  after(async () => {
    agent.child.kill('SIGKILL');
    await agent.exited;
    wss.close();
    await Promise.all([elsewhere.close(), home.close()]);
  });

  const deliver = async (id: string, fields: Partial<DeliverMessage> & Record<string, unknown>): Promise<ResultMessage> => {
    const msg = { type: 'deliver', id, attempt: 1, request_id: id, webhook_id: `msg_${id}`, destination_id: id, port: home.port, path: '/ok', method: 'POST', headers: ['content-type', 'text/plain'], ...fields };
    socket.send(encodeFrame(msg, Buffer.from('payload')));
    while (!results.has(id)) await new Promise<void>((r) => resultWaiters.push(r));
    resultWaiters = [];
    return results.get(id)!;
  };

  it('never connects to a host the server names, in whatever form', async () => {
    const tricks: Array<Partial<DeliverMessage> & Record<string, unknown>> = [
      { path: `http://127.0.0.2:${elsewhere.port}/x` },
      { path: `//127.0.0.2:${elsewhere.port}/x` },
      { path: `/\\127.0.0.2:${elsewhere.port}/x` },
      { path: 'x' },
      { port: 0 },
      { port: 70000 },
      { port: '80' as unknown as number },
      { path: '/x\r\nHost: 127.0.0.2' },
      { method: 'GET /x HTTP/1.1\r\n' },
    ];
    for (const [i, t] of tricks.entries()) {
      const r = await deliver(`trick-${i}`, t);
      assert.ok(r.error_class === 'ssrf_refused' || r.error_class === 'invalid_request', `${JSON.stringify(t)} refused: ${JSON.stringify(r)}`);
      assert.equal(r.status_code, undefined);
    }
    // fields the protocol does not have are ignored: the origin is always 127.0.0.1 (or ::1)
    const r = await deliver('host-field', { host: '127.0.0.2', url: `http://127.0.0.2:${elsewhere.port}/x`, port: elsewhere.port });
    assert.equal(r.error_class, 'connection_refused', 'nothing listens on that port on 127.0.0.1');
    assert.equal(elsewhere.received.length, 0, 'the other address was never reached');
    assert.equal(home.received.length, 0);
  });

  it('forwards a well-formed delivery to 127.0.0.1:{port}{path}', async () => {
    const r = await deliver('fine', {});
    assert.equal(r.status_code, 200);
    const [got] = await home.waitFor(1);
    assert.equal(got.url, '/ok');
    assert.equal(got.body.toString(), 'payload');
    assert.equal(elsewhere.received.length, 0);
  });
});
