import type { Writable } from 'node:stream';
import type { CaptureSummary } from './captures.ts';
import { presentCaptureSummary } from './present.ts';
import type { TailHub } from './tail.ts';

export interface TailStreamOptions {
  /** A comment line this often keeps proxies and the client's read timeout from closing an idle stream. */
  heartbeatMs: number;
  /** Bytes written but not yet taken by the client past which it is cut off (a slow client never grows memory). */
  maxBufferedBytes: number;
}

// 8 MiB: the hub hands a stream up to 2,000 captures at once (about 1.2 MB
// of events), written in one go, so a bound near that cut off clients that
// were reading as fast as they could (1 MiB did, under saturated HTTP
// ingest: bench/tail-http.ts). 8 MiB is about 1.5 s of the fastest ingest
// measured here, so a client cut off was really behind.
export const TAIL_DEFAULTS: TailStreamOptions = { heartbeatMs: 15_000, maxBufferedBytes: 8 * 1024 * 1024 };

/** One Server-Sent Event: the capture's id is the event id, so Last-Event-ID resumes after it. */
export function requestEvent(c: CaptureSummary): string {
  return `id: ${c.id}\nevent: request\ndata: ${JSON.stringify(presentCaptureSummary(c))}\n\n`;
}

/**
 * One client's live tail over an already-open SSE response `out`. Live
 * captures queue in memory only while the backlog is being sent; after that
 * each goes straight to the socket, and the socket's own buffer is what is
 * bounded: past maxBufferedBytes the client gets an `overflow` event and the
 * stream ends (it can reconnect with Last-Event-ID and read on from there).
 */
export class TailStream {
  private heartbeat: NodeJS.Timeout | undefined;
  private held: { id: string; text: string }[] | undefined = [];
  private heldBytes = 0;
  private sentBacklog = new Set<string>();
  private unsubscribe: (() => void) | undefined;
  private ended = false;
  /** The id of the last request event written: where a client resumes after an overflow. */
  private lastId: string | undefined;
  private opened = false;

  constructor(
    private readonly out: Writable,
    private readonly opts: TailStreamOptions,
    private readonly onEnd: () => void = () => {},
  ) {
    out.on('close', () => this.end());
  }

  /**
   * Follows the endpoint: subscribes first, then (for a resuming client)
   * sends the captures stored after `lastEventId`, then what arrived meanwhile.
   */
  async start(
    hub: TailHub,
    organizationId: string,
    endpointId: string,
    backlog?: (afterId: string) => Promise<CaptureSummary[]>,
    lastEventId?: string,
    open: () => void = () => {},
  ): Promise<void> {
    const sub = hub.subscribe({ organizationId, endpointId, push: (c) => this.push(c) });
    this.unsubscribe = sub.unsubscribe;
    this.lastId = lastEventId;
    await sub.ready;
    if (this.ended) return;
    // the headers go out only now: a capture acknowledged after a client sees them is pushed
    open();
    this.opened = true;
    this.write(`retry: 2000\n: following endpoint ${endpointId}\n\n`);
    this.heartbeat = setInterval(() => this.write(': heartbeat\n\n'), this.opts.heartbeatMs);
    this.heartbeat.unref();
    // clients (and tests) may wait for this line; every capture committed since the headers is pushed
    if (!this.write(': live\n\n')) return;
    if (lastEventId && backlog) {
      let after = lastEventId;
      for (;;) {
        const page = await backlog(after);
        if (this.ended) return;
        for (const c of page) {
          this.sentBacklog.add(c.id);
          if (!this.write(requestEvent(c))) return;
        }
        if (page.length === 0) break;
        after = page[page.length - 1].id;
        // a long backlog is sent as fast as the client reads it, not into memory
        if (this.out.writableLength > this.opts.maxBufferedBytes / 2) await new Promise((r) => this.out.once('drain', r));
      }
    }
    const held = this.held ?? [];
    this.held = undefined;
    for (const e of held) if (!this.sentBacklog.has(e.id) && !this.write(e.text)) return;
    this.sentBacklog.clear();
  }

  private push(c: CaptureSummary): void {
    if (this.ended) return;
    if (this.held) {
      // still sending the backlog: hold, within the same bound as the socket
      const text = requestEvent(c);
      this.held.push({ id: c.id, text });
      this.heldBytes += text.length;
      if (this.heldBytes > this.opts.maxBufferedBytes) this.overflow();
      return;
    }
    this.write(requestEvent(c));
  }

  /** Writes unless the client is too far behind; false when the stream ended. */
  private write(text: string): boolean {
    if (this.ended) return false;
    if (this.out.writableLength > this.opts.maxBufferedBytes) {
      this.overflow();
      return false;
    }
    this.out.write(text);
    if (text.startsWith('id: ')) this.lastId = text.slice(4, text.indexOf('\n'));
    return true;
  }

  private overflow(): void {
    if (this.ended) return;
    const body = {
      error: { code: 'slow_consumer', message: `The client fell more than ${this.opts.maxBufferedBytes} bytes behind; reconnect with Last-Event-ID to read on.` },
      // everything up to this id was written before this event: resume after it
      last_event_id: this.lastId ?? null,
    };
    this.out.write(`event: overflow\ndata: ${JSON.stringify(body)}\n\n`);
    this.end();
  }

  /** Ends the stream with a final `closed` event saying why (access withdrawn, endpoint deleted). */
  close(code: string, message: string): void {
    if (this.ended) return;
    if (this.opened) this.out.write(`event: closed\ndata: ${JSON.stringify({ error: { code, message }, last_event_id: this.lastId ?? null })}\n\n`);
    this.end();
  }

  /** Ends the stream (shutdown, client gone, overflow). */
  end(): void {
    if (this.ended) return;
    this.ended = true;
    clearInterval(this.heartbeat);
    this.unsubscribe?.();
    this.held = undefined;
    if (!this.out.writableEnded) this.out.end();
    this.onEnd();
  }
}
