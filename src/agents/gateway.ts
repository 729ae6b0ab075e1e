import { randomUUID } from 'node:crypto';
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { WebSocketServer, type WebSocket } from 'ws';
import { createLoop, type Loop, type LoopMetrics } from '../background/scheduler.ts';
import type { Config } from '../config.ts';
import type { Db } from '../db/db.ts';
import { renewLeases } from '../delivery/claim.ts';
import { failRevokedAgentDeliveries } from '../delivery/revoked-agent.ts';
import type { AttemptResult, ClaimedDelivery, Transport } from '../delivery/transport.ts';
import { DeliveryWorker } from '../delivery/worker.ts';
import type { DeliveryMetrics } from '../metrics/metrics.ts';
import { findAgentByToken, type Agent } from './agents.ts';
import { AgentLink } from './link.ts';
import { AGENTS_CHANNEL } from './manage.ts';
import { listAgentTargets, readConnections, registerConnection, unregisterConnection } from './presence.ts';
import { limitsOf } from '../transformations/sandbox.ts';
import {
  AGENT_PATH,
  CLOSE_PROTOCOL_ERROR,
  CLOSE_REPLACED,
  CLOSE_TOKEN_INVALID,
  decodeFrame,
  DEFAULT_AGENT_MAX_BODY_BYTES,
  encodeFrame,
  FRAME_OVERHEAD_BYTES,
  frameBytes,
  HEARTBEAT_MS,
  LINK_TIMEOUT_MS,
  MAX_FRAME_HEADER,
  type AgentMessage,
  type HelloMessage,
} from './protocol.ts';

/** Unanswered deliveries per agent link: enough to hide the round trip, small enough to bound the agent's memory. */
export const AGENT_WINDOW = 32;
/** The row check (revocation, re-issue, takeover) runs this often besides NOTIFY; the heartbeat write every HEARTBEAT_EVERY checks. */
const CHECK_MS = 1_000;
const HEARTBEAT_EVERY = 5;
/** Deliveries queued for an agent after it was revoked are ended every this many checks (src/delivery/revoked-agent.ts). */
const REVOKED_SWEEP_EVERY = 30;

export interface GatewayDeps {
  db: Db;
  config: Config;
  logger: Logger;
  node: string;
  /** Called after each recorded outcome (benchmarks observe through it). */
  onSettled?: (delivery: ClaimedDelivery, status: string) => void;
  metrics?: DeliveryMetrics;
  loopMetrics?: LoopMetrics;
}

/**
 * The agent gateway of one node. Agents dial the API listener at
 * AGENT_PATH; this node keeps their sockets and runs a DeliveryWorker that
 * claims only the deliveries of the agents connected here (DESIGN.md: the
 * node holding an agent's socket claims its deliveries, so no message bus is
 * needed). A link that drops gives its unfinished deliveries back to the
 * queue at once, keeping their place in line.
 */
export class AgentGateway {
  private readonly wss: WebSocketServer;
  private readonly links = new Map<string, AgentLink>();
  readonly worker: DeliveryWorker;
  private readonly ticker: Loop<void>;
  private ticks = 0;
  private checking: Promise<void> | undefined;
  private recheck = false;
  private unlisten: (() => Promise<void>) | undefined;
  private stopped = false;

  constructor(private readonly d: GatewayDeps) {
    // The ws default (100 MiB) would let one frame exhaust memory: a delivery
    // is at most a captured body plus its headers.
    this.wss = new WebSocketServer({ noServer: true, maxPayload: d.config.maxBodyBytes + FRAME_OVERHEAD_BYTES });
    const transport: Transport = {
      destinationType: 'agent',
      send: (delivery, signal) => this.dispatch(delivery, signal),
      close: async () => {},
    };
    this.worker = new DeliveryWorker({
      db: d.db,
      logger: d.logger.child({ component: 'agent-delivery' }),
      node: d.node,
      transport,
      concurrency: Math.max(d.config.deliveryConcurrency, AGENT_WINDOW) * 2,
      leaseMs: d.config.deliveryLeaseMs,
      pollMs: d.config.deliveryPollMs,
      // an agent whose link is busy takes no more claims until it has room (the link wakes the worker then)
      agentIds: () => [...this.links.values()].filter((l) => l.hasRoom && l.ws.readyState === l.ws.OPEN).map((l) => l.agentId),
      onSettled: d.onSettled,
      metrics: d.metrics,
      transformLimits: limitsOf(d.config),
      // a dropped link gives up its own deliveries, not the others'
      abandonable: true,
    });
    this.ticker = createLoop({
      name: 'agent_links',
      everyMs: CHECK_MS,
      // pings and heartbeat writes count ticks: keep them near their period
      jitterMs: 50,
      metrics: d.loopMetrics,
      pass: async () => {
        this.tick();
        await this.checking;
        if (this.ticks % REVOKED_SWEEP_EVERY === 0) await this.sweepRevoked();
      },
    });
  }

  /** Agents connected to this node. */
  get connected(): number {
    return this.links.size;
  }

  async start(server: Server): Promise<void> {
    server.on('upgrade', (req, socket, head) => void this.upgrade(req, socket, head));
    this.unlisten = await this.d.db.listen(AGENTS_CHANNEL, () => this.check(false), () => this.check(false));
    await this.worker.start();
    this.ticker.start();
  }

  /** Closes every link (the agents reconnect, perhaps to another node) and gives their deliveries back. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    await this.ticker.stop();
    await this.unlisten?.().catch(() => {});
    const closing = [...this.links.values()].map((l) => this.closeLink(l, 1001, 'server shutting down'));
    await Promise.all(closing);
    await this.checking;
    await this.worker.stop(0);
    this.wss.close();
  }

  private async upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    const path = (req.url ?? '').split('?')[0];
    if (path !== AGENT_PATH) return refuse(socket, 404, 'not_found', `No WebSocket endpoint at ${path}; agents connect to ${AGENT_PATH}.`);
    // the agent retries, and lands on another node behind a load balancer
    if (this.stopped) return refuse(socket, 503, 'service_unavailable', 'This Weir node is shutting down; reconnect.');
    const auth = req.headers.authorization ?? '';
    const token = /^Bearer (\S+)$/.exec(auth)?.[1] ?? '';
    let agent: Agent | undefined;
    try {
      agent = await findAgentByToken(this.d.db, token);
    } catch (err) {
      this.d.logger.error({ err }, 'agent authentication failed');
      return refuse(socket, 503, 'service_unavailable', 'The agent could not be authenticated right now; retry.');
    }
    if (!agent) return refuse(socket, 401, 'unauthorized', 'The agent token is not valid: it is wrong, was re-issued, or the agent was revoked.');
    this.wss.handleUpgrade(req, socket, head, (ws) => void this.accept(ws, agent, req));
  }

  private async accept(ws: WebSocket, agent: Agent, req: IncomingMessage): Promise<void> {
    const header = (name: string) => {
      const v = req.headers[name];
      return typeof v === 'string' ? v.slice(0, 100) : null;
    };
    const connectionId = randomUUID();
    const link = new AgentLink(agent.id, connectionId, ws, AGENT_WINDOW, () => this.worker.wake(), maxFrameOf(req));
    ws.on('error', (err) => this.d.logger.debug({ err, agent: agent.id }, 'agent socket error'));
    ws.on('pong', () => (link.lastHeard = Date.now()));
    ws.on('message', (data, isBinary) => {
      link.lastHeard = Date.now();
      try {
        if (!isBinary) throw new Error('text frame');
        const { header: msg, body } = decodeFrame<AgentMessage>(frameBytes(data as Buffer));
        // a result for a delivery given back meanwhile (shutdown) is late, not malformed: it is dropped
        if (msg.type === 'result' && !link.settle(msg, body)) this.d.logger.debug({ agent: agent.id, delivery: msg.id }, 'late result ignored');
      } catch (err) {
        this.d.logger.warn({ err, agent: agent.id }, 'agent sent a malformed frame; closing its link');
        ws.close(CLOSE_PROTOCOL_ERROR, 'malformed frame');
      }
    });
    ws.on('close', () => void this.dropped(link));
    try {
      const ok = await registerConnection(this.d.db, {
        agentId: agent.id,
        connectionId,
        node: this.d.node,
        agentVersion: header('x-weir-agent-version'),
        hostname: header('x-weir-agent-hostname'),
      });
      if (!ok) return ws.close(CLOSE_TOKEN_INVALID, 'agent revoked');
      // closed while registering: the row must not keep naming a dead socket
      if (link.dropped || ws.readyState !== ws.OPEN) return await unregisterConnection(this.d.db, agent.id, connectionId);
      const previous = this.links.get(agent.id);
      this.links.set(agent.id, link);
      if (previous) await this.closeLink(previous, CLOSE_REPLACED, 'replaced by a newer connection of this agent');
      const hello: HelloMessage = {
        type: 'hello',
        agent_id: agent.id,
        agent_name: agent.name,
        environment: agent.environment,
        node: this.d.node,
        forward_timeout_ms: this.d.config.forwardTimeoutMs,
        max_in_flight: AGENT_WINDOW,
        targets: await listAgentTargets(this.d.db, agent.id),
      };
      ws.send(encodeFrame(hello));
      this.d.logger.info({ agent: agent.id, connection: connectionId }, 'agent connected');
      this.worker.wake();
    } catch (err) {
      this.d.logger.error({ err, agent: agent.id }, 'could not register an agent connection');
      ws.close(1011, 'server error');
    }
  }

  /** The transport: hands a claimed delivery to its agent's link on this node. */
  private dispatch(d: ClaimedDelivery, signal: AbortSignal): Promise<AttemptResult> {
    const link = d.agentId ? this.links.get(d.agentId) : undefined;
    if (link && link.ws.readyState === link.ws.OPEN) return link.send(d, signal);
    // Claimed just as its link dropped: give it back untried (after this
    // tick, once the worker has registered it as in flight).
    setImmediate(() => void this.worker.abandon((x) => x.id === d.id).catch((err) => this.d.logger.warn({ err }, 'could not release a delivery')));
    return new Promise((resolve) => signal.addEventListener('abort', () => resolve({ startedAt: new Date(), durationMs: 0, url: null, errorClass: 'network_error' }), { once: true }));
  }

  private async closeLink(link: AgentLink, code: number, reason: string): Promise<void> {
    if (link.ws.readyState === link.ws.OPEN || link.ws.readyState === link.ws.CONNECTING) link.ws.close(code, reason);
    await this.dropped(link);
  }

  /** A link is gone: forget it and release what it held, so it is sent again (first) wherever the agent reconnects. */
  private async dropped(link: AgentLink): Promise<void> {
    if (this.links.get(link.agentId) === link) this.links.delete(link.agentId);
    if (link.dropped) return;
    link.dropped = true;
    // give the socket a moment to close cleanly, then make sure it is gone
    setTimeout(() => link.ws.terminate(), 1_000).unref();
    try {
      const released = await this.worker.abandon((d) => link.owns(d.id));
      await unregisterConnection(this.d.db, link.agentId, link.connectionId);
      this.d.logger.info({ agent: link.agentId, connection: link.connectionId, released }, 'agent disconnected');
    } catch (err) {
      this.d.logger.warn({ err, agent: link.agentId }, 'could not release an agent link; its leases expire on their own');
    }
  }

  private tick(): void {
    this.ticks++;
    const now = Date.now();
    for (const link of this.links.values()) {
      // half-open: nothing (not even a pong) for LINK_TIMEOUT_MS
      if (now - link.lastHeard > LINK_TIMEOUT_MS) {
        this.d.logger.warn({ agent: link.agentId }, 'agent link silent; closing it');
        link.ws.terminate();
        void this.dropped(link);
      } else if (this.ticks % Math.round(HEARTBEAT_MS / CHECK_MS) === 0) link.ws.ping();
    }
    this.check(this.ticks % HEARTBEAT_EVERY === 0);
  }

  /** Ends the deliveries of revoked agents queued since their revocation (a destination may still name one). */
  private async sweepRevoked(): Promise<void> {
    try {
      let n = 0;
      for (let batch = -1; batch !== 0 && !this.stopped; n += batch) batch = await failRevokedAgentDeliveries(this.d.db, null);
      if (n > 0) this.d.logger.warn({ deliveries: n }, 'failed deliveries queued for revoked agents');
    } catch (err) {
      this.d.logger.warn({ err }, 'could not fail the deliveries of revoked agents; retrying');
    }
  }

  /** Closes links whose row names another connection (replaced) or none (token re-issued, agent revoked); heartbeats the rest. */
  private check(touch: boolean): void {
    if (this.checking) {
      this.recheck = true;
      return;
    }
    this.checking = (async () => {
      const links = [...this.links.values()];
      const rows = new Map((await readConnections(this.d.db, links, touch)).map((r) => [r.agent_id, r]));
      for (const link of links) {
        const row = rows.get(link.agentId);
        if (row && row.connection_id === link.connectionId && !row.revoked) continue;
        const replaced = row && !row.revoked && row.connection_id !== null;
        await this.closeLink(link, replaced ? CLOSE_REPLACED : CLOSE_TOKEN_INVALID, replaced ? 'replaced by a newer connection of this agent' : 'token re-issued or agent revoked');
      }
      if (touch) await renewLeases(this.d.db, this.worker.inFlightDeliveries().map((x) => x.leaseId), this.d.config.deliveryLeaseMs);
    })()
      .catch((err) => this.d.logger.warn({ err }, 'agent connection check failed; retrying'))
      .finally(() => {
        this.checking = undefined;
        if (this.recheck && !this.stopped) {
          this.recheck = false;
          this.check(false);
        }
      });
  }
}

/** The agent's frame limit from its handshake; agents that do not send it accept the protocol's default. */
function maxFrameOf(req: IncomingMessage): number {
  const v = req.headers[MAX_FRAME_HEADER];
  const n = typeof v === 'string' && /^\d{1,12}$/.test(v) ? Number(v) : 0;
  return n >= FRAME_OVERHEAD_BYTES ? n : DEFAULT_AGENT_MAX_BODY_BYTES + FRAME_OVERHEAD_BYTES;
}

/** Answers an upgrade request that will not become a WebSocket, in the API's error envelope. */
function refuse(socket: Duplex, status: number, code: string, message: string): void {
  const body = JSON.stringify({ error: { code, message } });
  const reason = { 401: 'Unauthorized', 404: 'Not Found', 503: 'Service Unavailable' }[status] ?? 'Error';
  socket.end(`HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
}
