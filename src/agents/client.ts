import { hostname } from 'node:os';
import WebSocket from 'ws';
import { LoopbackForwarder } from './forwarder.ts';
import type { AgentOutput } from './output.ts';
import {
  AGENT_PATH,
  CLOSE_REPLACED,
  CLOSE_TOKEN_INVALID,
  decodeFrame,
  encodeFrame,
  FRAME_OVERHEAD_BYTES,
  MAX_FRAME_HEADER,
  frameBytes,
  HEARTBEAT_MS,
  LINK_TIMEOUT_MS,
  PROTOCOL_VERSION,
  type DeliverMessage,
  type HelloMessage,
  type ServerMessage,
} from './protocol.ts';

export interface AgentClientOptions {
  /** The Weir base URL (http:// or https://), as printed by `weir serve`. */
  server: string;
  token: string;
  version: string;
  /** The largest body this agent accepts in a delivery (the server's WEIR_MAX_BODY_BYTES). */
  maxBodyBytes: number;
  output: AgentOutput;
}

/** Backoff before reconnect attempt n (0-based): exponential to 30 s, with jitter so a fleet does not reconnect in step. */
export function reconnectDelayMs(attempt: number, random = Math.random): number {
  const ceiling = Math.min(30_000, 500 * 2 ** Math.min(attempt, 10));
  return Math.round(ceiling / 2 + random() * (ceiling / 2));
}

/** One line saying why a connection attempt failed. */
export function describeConnectError(err: unknown, server: string): string {
  const e = err as { code?: string; message?: string };
  const code = e?.code ?? '';
  const host = URL.canParse(server) ? new URL(server).host : server;
  if (code === 'ECONNREFUSED') return `server unreachable: nothing accepts connections at ${host}`;
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return `server unreachable: the name ${new URL(server).hostname} does not resolve`;
  if (code === 'ETIMEDOUT' || /timed out/i.test(e?.message ?? '')) return `server unreachable: no answer from ${host} in time`;
  if (code === 'ECONNRESET' || code === 'EPIPE') return `connection to ${host} was reset`;
  if (/CERT|SSL|TLS|SELF_SIGNED|UNABLE_TO_|HOSTNAME|ALTNAME/.test(code) || /certificate|SSL|TLS/i.test(e?.message ?? '')) {
    return `TLS error talking to ${host}: ${e?.message ?? code} (trust a private CA with NODE_EXTRA_CA_CERTS)`;
  }
  return `connection to ${host} failed: ${e?.message ?? String(err)}`;
}

/**
 * `weir agent`: dials the gateway, performs the forwards it is handed on
 * loopback, reports each result, and reconnects forever with jittered
 * backoff, except when the token is refused (exit code 1). Resolves with the
 * exit code once stopped (stop() or a refused token).
 */
export class AgentClient {
  private readonly forwarder = new LoopbackForwarder(() => this.timeoutMs);
  private ws: WebSocket | undefined;
  private stopping = false;
  private attempt = 0;
  private timeoutMs = 30_000;
  private hello: HelloMessage | undefined;
  /** One chain per destination: its forwards run one at a time, in the order received. */
  private readonly lanes = new Map<string, Promise<void>>();
  private readonly inflight = new Set<AbortController>();
  private finish: ((code: number) => void) | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  readonly stats = { forwards: 0, succeeded: 0, failed: 0, connects: 0, startedAt: Date.now() };

  constructor(private readonly o: AgentClientOptions) {}

  run(): Promise<number> {
    const done = new Promise<number>((resolve) => (this.finish = resolve));
    this.connect();
    return done;
  }

  /** Stops: aborts local forwards (their results are never sent, so the server puts them back in the queue) and closes the link. */
  async stop(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    clearTimeout(this.retryTimer);
    for (const a of this.inflight) a.abort();
    this.ws?.close(1000, 'agent stopping');
    await this.forwarder.close();
    this.end(0);
  }

  private end(code: number): void {
    this.stopping = true;
    this.o.output.summary(this.stats);
    const f = this.finish;
    this.finish = undefined;
    f?.(code);
  }

  private connect(): void {
    if (this.stopping) return;
    const url = new URL(this.o.server);
    url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
    url.pathname = url.pathname.replace(/\/+$/, '') + AGENT_PATH;
    const ws = new WebSocket(url, {
      headers: {
        authorization: `Bearer ${this.o.token}`,
        'x-weir-agent-version': this.o.version,
        'x-weir-agent-hostname': hostname().slice(0, 100),
        'x-weir-agent-protocol': String(PROTOCOL_VERSION),
        [MAX_FRAME_HEADER]: String(this.o.maxBodyBytes + FRAME_OVERHEAD_BYTES),
      },
      // bounded like the server's side: a captured body plus its headers
      maxPayload: this.o.maxBodyBytes + FRAME_OVERHEAD_BYTES,
      handshakeTimeout: 10_000,
      perMessageDeflate: false,
    });
    this.ws = ws;
    let lastHeard = Date.now();
    let failure: string | undefined;
    let fatal = false;
    const heartbeat = setInterval(() => {
      if (Date.now() - lastHeard > LINK_TIMEOUT_MS) {
        failure = `no word from the server for ${LINK_TIMEOUT_MS / 1000} s`;
        ws.terminate();
        return;
      }
      if (ws.readyState === ws.OPEN) ws.send(encodeFrame({ type: 'heartbeat' }));
    }, HEARTBEAT_MS);
    ws.on('ping', () => (lastHeard = Date.now()));
    ws.on('unexpected-response', (_req, res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString('utf8').slice(0, 2000)));
      res.on('end', () => {
        let message = text;
        try {
          message = JSON.parse(text)?.error?.message ?? text;
        } catch {
          /* not JSON */
        }
        if (res.statusCode === 401) {
          fatal = true;
          failure = `token refused: ${message || 'the token is not valid'}`;
        } else if (res.statusCode === 404) failure = `no agent gateway at ${this.o.server} (HTTP 404): is --server the Weir base URL?`;
        else failure = `server answered HTTP ${res.statusCode}${message ? `: ${message}` : ''}`;
        ws.terminate();
      });
    });
    ws.on('error', (err) => {
      failure ??= describeConnectError(err, this.o.server);
    });
    ws.on('message', (data, isBinary) => {
      lastHeard = Date.now();
      try {
        if (!isBinary) throw new Error('text frame');
        const { header, body } = decodeFrame<ServerMessage>(frameBytes(data as Buffer));
        if (header.type === 'hello') this.onHello(header);
        else if (header.type === 'deliver') this.onDeliver(ws, header, body);
      } catch (err) {
        failure = `the server sent a malformed frame (${(err as Error).message})`;
        ws.terminate();
      }
    });
    ws.on('close', (code, reasonBuf) => {
      clearInterval(heartbeat);
      // results of forwards still running cannot be sent now: the server
      // puts those deliveries back in the queue and sends them again
      for (const a of this.inflight) a.abort();
      if (this.stopping) return;
      const reason = reasonBuf.toString('utf8');
      if (code === CLOSE_TOKEN_INVALID || code === CLOSE_REPLACED) {
        this.o.output.failure(code === CLOSE_REPLACED ? 'another agent connected with this token; stopping' : `the server closed the link: ${reason || 'token no longer valid'}; stopping`);
        return this.end(1);
      }
      if (fatal) {
        this.o.output.failure(`${failure}; stopping`);
        return this.end(1);
      }
      const connected = this.hello !== undefined && failure === undefined;
      const why = failure ?? (connected ? `link closed by the server (${code}${reason ? ` ${reason}` : ''})` : `link closed (${code})`);
      const delay = reconnectDelayMs(this.attempt++);
      this.o.output.disconnected(why, delay);
      this.hello = undefined;
      this.retryTimer = setTimeout(() => this.connect(), delay);
    });
  }

  private onHello(hello: HelloMessage): void {
    this.hello = hello;
    this.attempt = 0;
    this.timeoutMs = hello.forward_timeout_ms > 0 ? hello.forward_timeout_ms : 30_000;
    this.stats.connects++;
    this.o.output.connected(this.o.server, hello, this.stats.connects > 1);
  }

  private onDeliver(ws: WebSocket, msg: DeliverMessage, body: Buffer): void {
    const key = String(msg.destination_id ?? 'none');
    // abandoned with the link (close aborts everything in `inflight`), queued or running
    const abort = new AbortController();
    this.inflight.add(abort);
    const run = async () => {
      try {
        if (abort.signal.aborted) return;
        const { result, body: answer } = await this.forwarder.forward(msg, body, abort.signal);
        if (abort.signal.aborted || ws.readyState !== ws.OPEN) return;
        ws.send(encodeFrame(result, answer));
        this.stats.forwards++;
        if (result.status_code !== undefined && result.status_code >= 200 && result.status_code < 300) this.stats.succeeded++;
        else this.stats.failed++;
        this.o.output.forward(msg, result);
      } finally {
        this.inflight.delete(abort);
      }
    };
    const lane = (this.lanes.get(key) ?? Promise.resolve()).then(run, run);
    this.lanes.set(key, lane);
    void lane.finally(() => {
      if (this.lanes.get(key) === lane) this.lanes.delete(key);
    });
  }
}
