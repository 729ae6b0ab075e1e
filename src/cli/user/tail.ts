import type { WeirApi } from './api-client.ts';
import { ApiFailure } from './api-client.ts';
import type { Io } from './io.ts';
import { eventType, OutcomeWatcher } from './tail-outcomes.ts';

/** One line per capture: time, method, path and query, size, id, and the event type when the provider names one. */
function line(r: any, type: string | undefined): string {
  return `${r.received_at}  ${r.method.padEnd(6)} ${(r.path || '/') + (r.query ? `?${r.query}` : '')}  ${r.body_size} B  ${r.id}${type ? `  ${type}` : ''}`;
}

/**
 * `weir tail <endpoint>`: reads the live-tail SSE stream and prints one line
 * per capture until Ctrl-C; when the stream drops (a node restarting, this
 * client too slow) it reconnects with Last-Event-ID, so nothing still stored
 * is skipped. Each capture's line carries its event type, and its forwards'
 * outcomes follow as they complete, for up to `watchMs` (src/cli/user/tail-outcomes.ts).
 */
export async function tail(api: WeirApi, endpointId: string, io: Io, json: boolean, watchMs = 60_000): Promise<void> {
  const abort = new AbortController();
  const outcomes = new OutcomeWatcher(api, io, json, watchMs, abort.signal);
  const stop = () => {
    abort.abort();
    // Ctrl-C always ends the command: should anything still hold the event
    // loop (a stream whose abort never reached its socket), leave anyway
    setTimeout(() => process.exit(0), 3000).unref();
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  let lastId: string | undefined;
  try {
    while (!abort.signal.aborted) {
      try {
        await follow();
      } catch (err) {
        if (abort.signal.aborted) return;
        if (err instanceof ApiFailure && err.status >= 400 && err.status < 500) throw err;
        io.err(`weir: stream lost (${(err as Error).message}); reconnecting\n`);
      }
      if (!abort.signal.aborted) await new Promise((r) => setTimeout(r, 1000));
    }
  } finally {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
    abort.abort(); // ends the outcome watches too
  }

  async function follow(): Promise<void> {
    const { response: res, error } = await api.client.GET('/v1/endpoints/{id}/requests/stream', {
      params: { path: { id: endpointId } },
      headers: { accept: 'text/event-stream', ...(lastId ? { 'last-event-id': lastId } : {}) },
      parseAs: 'stream',
      signal: abort.signal,
    });
    if (!res.ok || !res.body) {
      const body = error as { error?: { code: string; message: string } } | undefined;
      throw new ApiFailure(res.status, body?.error?.code ?? 'error', body?.error?.message ?? `the stream answered ${res.status}`);
    }
    if (!lastId && !json) io.err(`Following ${endpointId} (Ctrl-C stops)\n`);
    const decoder = new TextDecoder();
    let buf = '';
    // read by hand, and cancel the read on abort: the stream is never idle
    // (heartbeats), so it must not depend on the fetch's own abort reaching it
    const reader = res.body.getReader();
    const cancel = () => void reader.cancel().catch(() => {});
    abort.signal.addEventListener('abort', cancel, { once: true });
    try {
      for (;;) {
        const { value: chunk, done } = await reader.read();
        if (done || abort.signal.aborted) return;
        buf += decoder.decode(chunk as Uint8Array, { stream: true });
        let cut;
        while ((cut = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, cut);
          buf = buf.slice(cut + 2);
          const fields = new Map<string, string>();
          for (const l of block.split('\n')) {
            const at = l.indexOf(': ');
            if (at > 0) fields.set(l.slice(0, at), l.slice(at + 2));
          }
          if (fields.get('event') === 'request') {
            const r = JSON.parse(fields.get('data') ?? '{}');
            lastId = fields.get('id');
            const type = await eventType(api, r, abort.signal);
            io.out(json ? JSON.stringify({ ...r, event_type: type ?? null }) + '\n' : line(r, type) + '\n');
            outcomes.add(r.id);
          } else if (fields.get('event') === 'overflow') {
            io.err('weir: fell behind the stream; resuming after the last capture shown\n');
          } else if (block === ': live' && json) {
            io.out(JSON.stringify({ event: 'live', endpoint_id: endpointId }) + '\n');
          }
        }
      }
    } finally {
      abort.signal.removeEventListener('abort', cancel);
      cancel();
    }
  }
}
