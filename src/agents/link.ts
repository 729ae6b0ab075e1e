import type { WebSocket } from 'ws';
import { buildForwardRequest } from '../delivery/forward-request.ts';
import { RESPONSE_BODY_CAP } from '../delivery/http-transport.ts';
import { parseRetryAfter, type ErrorClass } from '../delivery/retry-policy.ts';
import type { AttemptResult, ClaimedDelivery } from '../delivery/transport.ts';
import { DEFAULT_AGENT_MAX_BODY_BYTES, encodeFrame, FRAME_OVERHEAD_BYTES, type DeliverMessage, type ResultMessage } from './protocol.ts';

/** What an agent may report; anything else is recorded as a network error. */
const AGENT_ERROR_CLASSES: ReadonlySet<string> = new Set<ErrorClass>([
  'http_status',
  'redirect',
  'connection_refused',
  'connect_timeout',
  'timeout',
  'network_error',
  'invalid_request',
  'ssrf_refused',
]);

interface Pending {
  delivery: ClaimedDelivery;
  url: string;
  resolve: (r: AttemptResult) => void;
  sent: boolean;
  startedAt: Date;
  /** When the frame went to the agent (epoch ms): the attempt cannot have started earlier. */
  sentAt: number;
}

/**
 * One agent's live connection on this node: sends deliveries over it,
 * at most `window` unanswered at once (the rest wait here, in claim order,
 * their leases renewed by the gateway), and resolves each with the result
 * the agent reports.
 */
export class AgentLink {
  private readonly pending = new Map<string, Pending>();
  private readonly waiting: string[] = [];
  private unanswered = 0;
  lastHeard = Date.now();
  forwards = 0;
  /** Set once the gateway has let go of this link. */
  dropped = false;

  constructor(
    readonly agentId: string,
    readonly connectionId: string,
    readonly ws: WebSocket,
    private readonly window: number,
    /** Called when the link's load falls to half its window: room for the worker's next claim. */
    private readonly onRoom: () => void = () => {},
    /** The largest frame the agent accepts (MAX_FRAME_HEADER). */
    readonly maxFrameBytes = DEFAULT_AGENT_MAX_BODY_BYTES + FRAME_OVERHEAD_BYTES,
  ) {}

  /** Whether the worker may claim more for this agent: its load is at most half the window (claims come in batches). */
  get hasRoom(): boolean {
    return this.pending.size <= this.window / 2;
  }

  /** Deliveries held by this link (sent or waiting for room). */
  get load(): number {
    return this.pending.size;
  }

  owns(deliveryId: string): boolean {
    return this.pending.has(deliveryId);
  }

  /** Resolves with the agent's result; a delivery abandoned by the gateway resolves through `signal` and is never recorded. */
  send(d: ClaimedDelivery, signal: AbortSignal): Promise<AttemptResult> {
    const startedAt = new Date();
    const port = d.targetPort ?? 0;
    const req = buildForwardRequest(d.capture!, `http://127.0.0.1:${port}${d.targetPath ?? '/'}`, d.methodOverride);
    return new Promise((resolve) => {
      const entry: Pending = { delivery: d, url: req.url, resolve, sent: false, startedAt, sentAt: 0 };
      this.pending.set(d.id, entry);
      signal.addEventListener(
        'abort',
        () => {
          if (!this.pending.delete(d.id)) return;
          if (entry.sent) this.unanswered--;
          resolve({ startedAt, durationMs: 0, url: req.url, errorClass: 'network_error', errorMessage: 'abandoned' });
          this.pump();
        },
        { once: true },
      );
      const u = new URL(req.url);
      const message: DeliverMessage = {
        type: 'deliver',
        id: d.id,
        attempt: d.attemptNumber,
        request_id: d.requestId,
        webhook_id: req.webhookId,
        destination_id: d.forwardDestinationId,
        port,
        path: u.pathname + u.search,
        method: req.method,
        headers: req.headers,
      };
      const frame = encodeFrame(message, req.body);
      if (frame.length > this.maxFrameBytes) {
        // The agent would close the link on this frame, and the delivery
        // would come back at every reconnect: it fails alone, the link stays.
        this.pending.delete(d.id);
        resolve({
          startedAt,
          durationMs: 0,
          url: req.url,
          errorClass: 'invalid_request',
          errorMessage:
            `the request (${req.body.length} bytes of body) does not fit the agent link's frame limit of ${this.maxFrameBytes} bytes; ` +
            `raise WEIR_MAX_BODY_BYTES where the agent runs, or forward it over HTTPS`,
        });
        return;
      }
      this.outbox.set(d.id, frame);
      this.waiting.push(d.id);
      this.pump();
    });
  }

  private readonly outbox = new Map<string, Buffer>();

  /** Sends waiting deliveries while the window has room, in the order they were claimed. */
  private pump(): void {
    while (this.unanswered < this.window && this.waiting.length > 0) {
      const id = this.waiting.shift()!;
      const frame = this.outbox.get(id);
      this.outbox.delete(id);
      const entry = this.pending.get(id);
      if (!entry || !frame) continue;
      entry.sent = true;
      entry.sentAt = Date.now();
      this.unanswered++;
      this.ws.send(frame);
    }
  }

  /** Applies a result frame from the agent; false when it names no delivery this link sent (a protocol error). */
  settle(msg: ResultMessage, body: Buffer): boolean {
    const entry = this.pending.get(msg.id);
    if (!entry || !entry.sent) return false;
    this.pending.delete(msg.id);
    this.unanswered--;
    this.forwards++;
    entry.resolve(toAttempt(msg, body, entry));
    this.pump();
    if (this.pending.size === Math.floor(this.window / 2)) this.onRoom();
    return true;
  }
}

/** The agent's report as an attempt row, recorded exactly like an https attempt. Values are checked, not trusted. */
function toAttempt(msg: ResultMessage, body: Buffer, entry: Pending): AttemptResult {
  const headers = Array.isArray(msg.headers)
    ? msg.headers.filter((h): h is [string, string] => Array.isArray(h) && typeof h[0] === 'string' && typeof h[1] === 'string').slice(0, 500)
    : undefined;
  const status = Number.isInteger(msg.status_code) && msg.status_code! >= 100 && msg.status_code! <= 999 ? msg.status_code : undefined;
  let errorClass = typeof msg.error_class === 'string' ? (AGENT_ERROR_CLASSES.has(msg.error_class) ? (msg.error_class as ErrorClass) : 'network_error') : undefined;
  if (status === undefined && errorClass === undefined) errorClass = 'network_error';
  const retryAfter = headers?.find(([n]) => n.toLowerCase() === 'retry-after')?.[1];
  // The agent's clock is not ours and its report is not trusted: the
  // attempt happened between the frame leaving this node and its result
  // arriving, so started_at is clamped to that window and the duration to
  // what is left of it.
  const now = Date.now();
  const reported = Date.parse(msg.started_at);
  const started = Math.min(Math.max(Number.isFinite(reported) ? reported : entry.sentAt, entry.sentAt), now);
  const duration = Number.isFinite(msg.duration_ms) ? Math.max(0, Math.round(msg.duration_ms)) : 0;
  return {
    startedAt: new Date(started),
    durationMs: Math.min(duration, now - started),
    url: entry.url,
    statusCode: status,
    errorClass,
    errorMessage: typeof msg.error_message === 'string' ? msg.error_message.slice(0, 1000) : undefined,
    retryAfterSeconds: parseRetryAfter(retryAfter),
    responseHeaders: headers,
    responseBody: status === undefined ? undefined : body.subarray(0, RESPONSE_BODY_CAP),
    responseTruncated: msg.truncated === true || body.length > RESPONSE_BODY_CAP,
  };
}
