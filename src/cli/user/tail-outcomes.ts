import { unwrap } from '../../client/index.ts';
import type { WeirApi } from './api-client.ts';
import type { Io } from './io.ts';

/**
 * Issue 28 item 5: what `weir tail` adds to each capture line — the event
 * type when the provider names it, and each forward's outcome as it
 * completes (README, "Use it from the command line").
 *
 * The live-tail stream carries captures, not deliveries, so outcomes come
 * from polling GET /v1/requests/{id}/forwards for the captures seen: the
 * calls stay bounded — at most MAX_WATCHES captures are followed at once
 * (more wait in a queue of QUEUE_MAX; beyond it they are not followed and
 * stderr says so), each poll backs off from 0.5 s to 5 s, and a capture is
 * followed until all of its deliveries reach a final state or `watchMs`
 * passes.
 */
export const MAX_WATCHES = 8;
export const QUEUE_MAX = 100;
const FIRST_POLL_MS = 500;
const MAX_POLL_MS = 5000;
/** Bodies larger than this are not fetched to read a JSON `type`. */
export const TYPE_BODY_MAX = 64 * 1024;
const FINAL = new Set(['succeeded', 'failed', 'dead', 'superseded', 'skipped']);

type Headers = Array<{ name: string; value: string }>;

/** The event type a provider names in a header: GitHub's X-GitHub-Event, Shopify's X-Shopify-Topic. */
export function headerEventType(headers: Headers): string | undefined {
  for (const name of ['x-github-event', 'x-shopify-topic']) {
    const h = headers.find((x) => x.name.toLowerCase() === name);
    if (h && h.value) return h.value;
  }
  return undefined;
}

const isJson = (contentType: string | null) => {
  const t = (contentType ?? '').split(';')[0].trim().toLowerCase();
  return t === 'application/json' || t.endsWith('+json');
};

/**
 * The capture's event type: a header's (above), else the top-level string
 * `type` of a JSON body (Stripe's, and providers that follow it), read with
 * one GET of the capture when the body is JSON and at most TYPE_BODY_MAX
 * bytes. Undefined when neither names one, or the capture cannot be read.
 */
export async function eventType(api: WeirApi, capture: any, signal: AbortSignal): Promise<string | undefined> {
  const fromHeader = headerEventType(capture.headers ?? []);
  if (fromHeader) return fromHeader;
  if (!isJson(capture.content_type) || capture.body_size === 0 || capture.body_size > TYPE_BODY_MAX) return undefined;
  try {
    const full = await unwrap(
      api.client.GET('/v1/requests/{id}', { params: { path: { id: capture.id } }, signal: AbortSignal.any([signal, AbortSignal.timeout(5000)]) }),
    );
    if (full.body_encoding !== 'utf8') return undefined;
    const parsed = JSON.parse(full.body);
    return parsed && typeof parsed === 'object' && typeof parsed.type === 'string' && parsed.type ? parsed.type : undefined;
  } catch {
    return undefined;
  }
}

/** One forward's outcome as printed: a JSON line with --json, else text. */
function outcomeLine(requestId: string, f: any, json: boolean, stopped: boolean): string {
  const last = f.attempts.at(-1);
  // a delivery with a failed attempt behind it is retrying, whether its next attempt waits or runs now
  const status = (f.status === 'pending' || f.status === 'in_flight') && f.attempt_count > 0 ? 'retrying' : f.status;
  if (json) {
    return (
      JSON.stringify({
        event: 'forward',
        request_id: requestId,
        delivery_id: f.id,
        destination: f.destination_name ?? f.url ?? f.agent_id,
        status,
        final: FINAL.has(f.status),
        attempt: f.attempt_count,
        status_code: last?.status_code ?? f.last_status_code ?? null,
        error_class: last?.error_class ?? null,
        error: last?.error_message ?? f.last_error ?? null,
        next_attempt_at: f.next_attempt_at,
        ...(stopped ? { stopped_following: true } : {}),
      }) + '\n'
    );
  }
  const code = last?.status_code ?? f.last_status_code;
  const answer = code ? `HTTP ${code}` : last?.error_class ? `${last.error_class}${last.error_message ? ': ' + last.error_message : ''}` : (f.last_error ?? '-');
  const next = status === 'retrying' && f.next_attempt_at ? `, next attempt ${f.next_attempt_at}` : '';
  const note = stopped ? ' (no longer followed)' : '';
  return `  -> ${f.destination_name ?? f.url ?? 'destination'}  ${status}  attempt ${f.attempt_count}  ${answer}${next}${note}  ${requestId}\n`;
}

/** Follows captures' forwards, a bounded number at a time, printing each change of outcome. */
export class OutcomeWatcher {
  private active = 0;
  private readonly queue: string[] = [];
  private warnedFull = false;

  constructor(
    private readonly api: WeirApi,
    private readonly io: Io,
    private readonly json: boolean,
    private readonly watchMs: number,
    private readonly signal: AbortSignal,
  ) {}

  /** Follows one capture now, or later when MAX_WATCHES are being followed. */
  add(requestId: string): void {
    if (this.watchMs <= 0) return;
    if (this.active < MAX_WATCHES) return void this.run(requestId);
    if (this.queue.length < QUEUE_MAX) return void this.queue.push(requestId);
    if (!this.warnedFull) this.io.err(`weir: more than ${MAX_WATCHES + QUEUE_MAX} captures waiting for outcomes; not following some (weir requests show <id> has them)\n`);
    this.warnedFull = true;
  }

  private async run(requestId: string): Promise<void> {
    this.active++;
    try {
      await this.watch(requestId);
    } catch (err) {
      if (!this.signal.aborted) this.io.err(`weir: stopped following ${requestId}: ${(err as Error).message}\n`);
    } finally {
      this.active--;
      const next = this.queue.shift();
      if (next && !this.signal.aborted) void this.run(next);
    }
  }

  private async watch(requestId: string): Promise<void> {
    const deadline = Date.now() + this.watchMs;
    const shown = new Map<string, string>();
    let forwards: any[] = [];
    for (let wait = FIRST_POLL_MS; ; wait = Math.min(wait * 2, MAX_POLL_MS)) {
      const page = await unwrap(
        this.api.client.GET('/v1/requests/{id}/forwards', { params: { path: { id: requestId }, query: { limit: 50 } }, signal: this.signal }),
      );
      forwards = [...page.data].reverse(); // oldest first
      for (const f of forwards) {
        if (f.status === 'in_flight' || (f.status === 'pending' && f.attempt_count === 0)) continue;
        const state = `${f.status}/${f.attempt_count}`;
        if (shown.get(f.id) === state) continue;
        shown.set(f.id, state);
        this.io.out(outcomeLine(requestId, f, this.json, false));
      }
      if (forwards.every((f) => FINAL.has(f.status))) return;
      if (Date.now() + wait > deadline) break;
      await sleep(wait, this.signal);
    }
    for (const f of forwards) if (!FINAL.has(f.status)) this.io.out(outcomeLine(requestId, f, this.json, true));
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const t = setTimeout(() => {
      signal.removeEventListener('abort', stop);
      resolve();
    }, ms);
    const stop = () => {
      clearTimeout(t);
      reject(signal.reason);
    };
    signal.addEventListener('abort', stop, { once: true });
  });
}
