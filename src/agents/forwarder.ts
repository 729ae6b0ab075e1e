import { Agent } from 'undici';
import { classifyError, readCapped, RESPONSE_BODY_CAP } from '../delivery/http-transport.ts';
import type { DeliverMessage, ResultMessage } from './protocol.ts';

/** What HTTP allows as a method (RFC 9110 token), at most 32 characters as the destination rules say. */
const METHOD_RE = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]{1,32}$/;

/**
 * Why the agent refuses a delivery before connecting anywhere, or undefined.
 * The agent only ever connects to its own loopback: it takes a port and a
 * path from the server and builds the origin itself, so whatever a server
 * sends (a host, a URL, an absolute or protocol-relative path) cannot point
 * it elsewhere.
 */
export function refusal(msg: DeliverMessage): { errorClass: 'ssrf_refused' | 'invalid_request'; message: string } | undefined {
  if (!Number.isInteger(msg.port) || msg.port < 1 || msg.port > 65535) return { errorClass: 'ssrf_refused', message: `refused: port ${String(msg.port)} is not a port 1-65535 on this machine` };
  if (typeof msg.path !== 'string' || !msg.path.startsWith('/') || msg.path.startsWith('//') || /[\s\p{Cc}\\]/u.test(msg.path)) {
    return { errorClass: 'ssrf_refused', message: `refused: the agent forwards only to a path on 127.0.0.1, not ${JSON.stringify(String(msg.path).slice(0, 200))}` };
  }
  if (typeof msg.method !== 'string' || !METHOD_RE.test(msg.method)) return { errorClass: 'invalid_request', message: 'refused: not a valid HTTP method' };
  if (!Array.isArray(msg.headers) || msg.headers.length % 2 !== 0 || !msg.headers.every((h) => typeof h === 'string')) {
    return { errorClass: 'invalid_request', message: 'refused: malformed headers' };
  }
  return undefined;
}

/**
 * Performs forwards against 127.0.0.1 (and ::1 when nothing listens on the
 * IPv4 loopback: dev servers bound to "localhost" often listen on ::1 only),
 * recording what an https attempt records: status, headers, timing and the
 * first 64 KiB of the answer.
 */
export class LoopbackForwarder {
  private readonly pool = new Agent({ keepAliveTimeout: 4_000, connect: { timeout: 5_000 } });

  constructor(private readonly timeoutMs: () => number) {}

  async forward(msg: DeliverMessage, body: Buffer, signal: AbortSignal): Promise<{ result: ResultMessage; body: Buffer }> {
    const started = new Date();
    const t0 = performance.now();
    const result = (r: Omit<ResultMessage, 'type' | 'id' | 'started_at' | 'duration_ms'>): ResultMessage => ({
      type: 'result',
      id: msg.id,
      started_at: started.toISOString(),
      duration_ms: Math.round(performance.now() - t0),
      ...r,
    });
    const refused = refusal(msg);
    if (refused) return { result: result({ error_class: refused.errorClass, error_message: refused.message }), body: Buffer.alloc(0) };
    let lastError: unknown;
    for (const host of ['127.0.0.1', '[::1]']) {
      const abort = new AbortController();
      const onStop = () => abort.abort();
      signal.addEventListener('abort', onStop, { once: true });
      let timedOut = false;
      const timer = setTimeout(() => {
        timedOut = true;
        abort.abort();
      }, this.timeoutMs());
      try {
        const res = await this.pool.request({
          origin: `http://${host}:${msg.port}`,
          path: msg.path,
          method: msg.method,
          headers: msg.headers,
          body: body.length > 0 ? body : null,
          signal: abort.signal,
        });
        const headers: Array<[string, string]> = [];
        for (const [name, value] of Object.entries(res.headers)) for (const v of Array.isArray(value) ? value : [value ?? '']) headers.push([name, v]);
        const read = await readCapped(res.body, RESPONSE_BODY_CAP);
        const status = res.statusCode;
        const errorClass = status >= 300 && status < 400 ? 'redirect' : status >= 200 && status < 300 ? undefined : 'http_status';
        return {
          result: result({ status_code: status, headers, truncated: read.truncated, error_class: errorClass, error_message: errorClass ? `HTTP ${status}` : undefined }),
          body: read.body,
        };
      } catch (err) {
        lastError = timedOut ? 'timeout' : err;
        // only "nothing listens here" is worth trying on the other loopback
        if (timedOut || signal.aborted || classifyError(err) !== 'connection_refused') break;
      } finally {
        clearTimeout(timer);
        signal.removeEventListener('abort', onStop);
      }
    }
    if (lastError === 'timeout') return { result: result({ error_class: 'timeout', error_message: `no complete answer within ${this.timeoutMs()} ms` }), body: Buffer.alloc(0) };
    const errorClass = classifyError(lastError);
    const message = errorClass === 'connection_refused' ? `nothing listens on port ${msg.port} (127.0.0.1 or ::1)` : String((lastError as Error)?.message ?? lastError);
    return { result: result({ error_class: errorClass, error_message: message.slice(0, 1000) }), body: Buffer.alloc(0) };
  }

  async close(): Promise<void> {
    await this.pool.close().catch(() => {});
  }
}
