import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach } from 'node:test';
import type { AddressInfo } from 'node:net';
import { cleanEnv, http as api, WEIR_BIN, ROOT, type WeirProcess } from '../helpers/weir-process.ts';
import type { Received, Reply } from '../helpers/https.ts';

export interface LocalServer {
  port: number;
  received: Received[];
  waitFor(n: number, timeoutMs?: number): Promise<Received[]>;
  close(): Promise<void>;
}

/** A plain HTTP server on a loopback address: what a developer runs beside the agent. Records requests exactly as they arrive. */
export async function startLocalServer(opts: { reply?: (r: Received, index: number) => Reply; host?: string } = {}): Promise<LocalServer> {
  const received: Received[] = [];
  const waiters: Array<{ n: number; resolve: () => void }> = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const r: Received = { method: req.method ?? '', url: req.url ?? '', rawHeaders: req.rawHeaders, headers: req.headers, body: Buffer.concat(chunks), at: Date.now() };
      const index = received.push(r) - 1;
      for (const w of [...waiters]) {
        if (received.length < w.n) continue;
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve();
      }
      const reply = opts.reply?.(r, index) ?? {};
      if (reply === 'hang') return;
      if (reply === 'destroy') return req.socket.destroy();
      const send = () => res.writeHead(reply.status ?? 200, reply.headers ?? { 'content-type': 'text/plain' }).end(reply.body ?? 'ok');
      if (reply.delayMs) setTimeout(send, reply.delayMs);
      else send();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, opts.host ?? '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    received,
    waitFor(n, timeoutMs = 30_000) {
      if (received.length >= n) return Promise.resolve(received);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`local server got ${received.length} of ${n} requests within ${timeoutMs} ms`)), timeoutMs);
        waiters.push({ n, resolve: () => (clearTimeout(timer), resolve(received)) });
      });
    },
    close() {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

export interface AgentProcess {
  child: ChildProcess;
  /** Every --json line printed so far. */
  events: Array<Record<string, any>>;
  stderr(): string;
  waitForEvent(pred: (e: Record<string, any>) => boolean, what: string, timeoutMs?: number): Promise<Record<string, any>>;
  exited: Promise<number | null>;
}

/** The real `weir agent --json` CLI, as a user runs it. */
export function startAgent(server: string, token: string, env: Record<string, string> = {}): AgentProcess {
  const child = spawn(process.execPath, [WEIR_BIN, 'agent', '--server', server, '--token', token, '--json'], { cwd: ROOT, env: cleanEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
  const events: Array<Record<string, any>> = [];
  let buf = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => {
    buf += d.toString('utf8');
    let nl: number;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      if (line.trim()) events.push(JSON.parse(line));
    }
  });
  child.stderr!.on('data', (d: Buffer) => (err += d.toString('utf8')));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return {
    child,
    events,
    stderr: () => err,
    exited,
    async waitForEvent(pred, what, timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const e = events.find(pred);
        if (e) return e;
        if (Date.now() > deadline) throw new Error(`agent: timed out waiting for ${what}; events: ${JSON.stringify(events)}; stderr: ${err}`);
        await new Promise((r) => setTimeout(r, 25));
      }
    },
  };
}

export interface AgentSetup {
  endpointId: string;
  slug: string;
  agentId: string;
  token: string;
  destinationId: string;
}

/** An endpoint, an agent and an agent destination to `port` + `path`, through the members' API. */
export async function agentDestination(
  weir: Pick<WeirProcess, 'base'>,
  key: string,
  opts: { port: number; path?: string; environment?: 'production' | 'development'; environmentOverride?: 'development'; rateLimitPerMinute?: number; agent?: { id: string; token: string } },
): Promise<AgentSetup> {
  const ok = (r: { status: number; json: any }, status: number) => {
    if (r.status !== status) throw new Error(`expected ${status}, got ${r.status}: ${JSON.stringify(r.json)}`);
    return r.json.data;
  };
  const agent = opts.agent ?? ok(await api(weir.base, 'POST', '/v1/agents', { token: key, body: { name: 'laptop', environment: opts.environment ?? 'production' } }), 201);
  const ep = ok(await api(weir.base, 'POST', '/v1/endpoints', { token: key, body: { name: 'hooks' } }), 201);
  const dest = ok(
    await api(weir.base, 'POST', '/v1/destinations', {
      token: key,
      body: {
        name: 'local',
        destination_type: 'agent',
        endpoint_id: ep.id,
        agent_id: agent.id,
        target_port: opts.port,
        target_path: opts.path ?? '/hooks',
        ...(opts.environmentOverride ? { environment_override: opts.environmentOverride } : {}),
        ...(opts.rateLimitPerMinute ? { rate_limit_enabled: true, rate_limit_per_minute: opts.rateLimitPerMinute } : {}),
      },
    }),
    201,
  );
  return { endpointId: ep.id, slug: ep.slug, agentId: agent.id, token: agent.token, destinationId: dest.id };
}

/** POSTs to the ingest URL with raw headers (order, case and duplicates as given); resolves with the request id. */
export function capture(ingestPort: number, slug: string, opts: { path?: string; headers?: string[]; body?: Buffer | string; method?: string } = {}): Promise<string> {
  const body = typeof opts.body === 'string' ? Buffer.from(opts.body) : (opts.body ?? Buffer.from('{}'));
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port: ingestPort, method: opts.method ?? 'POST', path: `/h/${slug}${opts.path ?? ''}`, headers: ['Host', `127.0.0.1:${ingestPort}`, ...(opts.headers ?? ['content-type', 'application/json']), 'content-length', String(body.length)] },
      (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c));
        res.on('end', () => (res.statusCode === 200 ? resolve(JSON.parse(text).request_id) : reject(new Error(`ingest answered ${res.statusCode}: ${text}`))));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** A WEIR_PLANS file letting the bootstrap organization (plan free) enroll as many production agents as a test needs. */
export function roomyPlans(): string {
  const path = join(tmpdir(), `weir-agent-plans-${process.pid}.json`);
  writeFileSync(path, JSON.stringify({ free: { max_agents: 100 } }));
  return path;
}

/** Agent processes and local servers for the enclosing describe(), killed and closed after each test. */
export function useAgentsAndServers(): { agent(server: string, token: string): AgentProcess; local(...args: Parameters<typeof startLocalServer>): Promise<LocalServer> } {
  const agents: AgentProcess[] = [];
  const servers: LocalServer[] = [];
  afterEach(async () => {
    for (const a of agents.splice(0)) {
      a.child.kill('SIGKILL');
      await a.exited;
    }
    await Promise.all(servers.splice(0).map((s) => s.close()));
  });
  return {
    agent(server, token) {
      const a = startAgent(server, token);
      agents.push(a);
      return a;
    },
    async local(...args) {
      const s = await startLocalServer(...args);
      servers.push(s);
      return s;
    },
  };
}
