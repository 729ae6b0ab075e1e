/** A Server-Sent Events reader over fetch(): what the dashboard and `weir tail` do, with an Authorization header. */
export interface SseEvent {
  id?: string;
  event: string;
  data: string;
}

export interface SseConnection {
  status: number;
  contentType: string | null;
  events: SseEvent[];
  /** Comment lines (heartbeats) seen so far. */
  comments: string[];
  /** Resolves once `n` events arrived (rejects when the stream ends first). */
  waitForEvents(n: number): Promise<SseEvent[]>;
  waitForComment(text: string): Promise<void>;
  /** Resolves when the server ends the stream. */
  ended: Promise<void>;
  close(): void;
}

export async function openSse(url: string, key: string, headers: Record<string, string> = {}): Promise<SseConnection> {
  const abort = new AbortController();
  const res = await fetch(url, { headers: { authorization: `Bearer ${key}`, accept: 'text/event-stream', ...headers }, signal: abort.signal });
  const events: SseEvent[] = [];
  const comments: string[] = [];
  const waiters = new Set<() => void>();
  const notify = () => waiters.forEach((w) => w());
  let done = false;
  const ended = (async () => {
    if (!res.body) return;
    const decoder = new TextDecoder();
    let buf = '';
    try {
      for await (const chunk of res.body) {
        buf += decoder.decode(chunk, { stream: true });
        let cut;
        while ((cut = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, cut);
          buf = buf.slice(cut + 2);
          const e: SseEvent = { event: 'message', data: '' };
          let isEvent = false;
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) comments.push(line.slice(1).trim());
            else if (line.startsWith('id: ')) e.id = line.slice(4);
            else if (line.startsWith('event: ')) {
              e.event = line.slice(7);
              isEvent = true;
            } else if (line.startsWith('data: ')) {
              e.data += line.slice(6);
              isEvent = true;
            }
          }
          if (isEvent) events.push(e);
          notify();
        }
      }
    } catch {
      // aborted by close()
    } finally {
      done = true;
      notify();
    }
  })();
  const until = (what: string, ok: () => boolean) =>
    new Promise<void>((resolve, reject) => {
      const check = () => {
        if (ok()) {
          waiters.delete(check);
          resolve();
        } else if (done) {
          waiters.delete(check);
          reject(new Error(`the stream ended before ${what}; events: ${JSON.stringify(events)}`));
        }
      };
      waiters.add(check);
      check();
    });
  return {
    status: res.status,
    contentType: res.headers.get('content-type'),
    events,
    comments,
    waitForEvents: async (n) => {
      await until(`${n} events`, () => events.length >= n);
      return events.slice(0, n);
    },
    waitForComment: (text) => until(`a "${text}" comment`, () => comments.includes(text)),
    ended,
    close: () => abort.abort(),
  };
}
