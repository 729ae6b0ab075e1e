// Live tail of an endpoint's captures (GET /v1/endpoints/:id/requests/stream).
// EventSource cannot send an Authorization header and the API key must not go
// into a URL (it would land in logs and history), so this reads the
// Server-Sent Events through fetch() with the header, and reconnects with
// Last-Event-ID itself, as EventSource would. A 401 (revoked key) signs out.
import { REVOKED_MESSAGE, session } from './api.js';

/**
 * Follows one endpoint until stop() is called: onRequest(summary) for each
 * capture, onState('live' | 'reconnecting' | error text) as the link changes.
 */
export function followRequests({ endpointId, key = session.key, after, onRequest, onState }) {
  const abort = new AbortController();
  let lastId = after;
  let stopped = false;

  async function once() {
    const headers = { authorization: 'Bearer ' + key, accept: 'text/event-stream', 'x-weir-client': 'dashboard' };
    if (lastId) headers['last-event-id'] = lastId;
    const res = await fetch(`/v1/endpoints/${endpointId}/requests/stream`, { headers, signal: abort.signal });
    // the key was revoked or expired: back to sign-in, as every other request does
    if (res.status === 401 && key === session.key) session.signOut(REVOKED_MESSAGE);
    if (!res.ok) {
      const body = await res.json().catch(() => null);
      throw Object.assign(new Error(body?.error?.message || `HTTP ${res.status}`), { fatal: res.status < 500 });
    }
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    let buf = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buf += value;
      let cut;
      while ((cut = buf.indexOf('\n\n')) >= 0) {
        const block = buf.slice(0, cut);
        buf = buf.slice(cut + 2);
        let id = null;
        let event = 'message';
        let data = '';
        for (const line of block.split('\n')) {
          if (line === ': live') onState('live');
          else if (line.startsWith('id: ')) id = line.slice(4);
          else if (line.startsWith('event: ')) event = line.slice(7);
          else if (line.startsWith('data: ')) data += line.slice(6);
        }
        if (event === 'request') {
          lastId = id;
          onRequest(JSON.parse(data));
        }
      }
    }
  }

  (async () => {
    while (!stopped) {
      try {
        await once();
      } catch (err) {
        if (stopped) return;
        if (err.fatal) return onState(err.message);
      }
      if (stopped) return;
      // the server ended the stream (restart, a slow tab cut off): resume after the last capture shown
      onState('reconnecting');
      await new Promise((r) => setTimeout(r, 2000));
    }
  })();

  return {
    stop() {
      stopped = true;
      abort.abort();
    },
  };
}
