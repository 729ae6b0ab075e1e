import type { LookupFunction } from 'node:net';
import { isIP } from 'node:net';
import { createSecureContext, rootCertificates } from 'node:tls';
import { Agent, buildConnector, util } from 'undici';
import { buildForwardRequest } from './forward-request.ts';
import { isSuccess, parseRetryAfter, type ErrorClass } from './retry-policy.ts';
import { addressAllowed, resolveChecked, SsrfRefusedError, systemResolver, type Resolver } from './ssrf.ts';
import type { AttemptResult, Sendable, Transport } from './transport.ts';

/** How much of a destination's answer is read and stored; the rest is not read at all. */
export const RESPONSE_BODY_CAP = 64 * 1024;

export interface HttpTransportOptions {
  allowPrivate: boolean;
  connectTimeoutMs: number;
  /** The whole attempt: connect, send, status line, headers and the capped body. */
  timeoutMs: number;
  /**
   * Extra CA certificates to trust besides the system roots (tests pass their
   * test CA here; a spawned Weir trusts it through NODE_EXTRA_CA_CERTS).
   */
  ca?: string | Buffer | Array<string | Buffer>;
  /** DNS resolution; the system resolver unless a test injects one. */
  resolver?: Resolver;
  responseBodyCap?: number;
}

/**
 * The HTTPS transport: one undici Agent (connection pooling, keep-alive)
 * whose connector refuses guarded addresses. Host names are resolved by our
 * own lookup, which checks every answer and hands the socket only checked
 * addresses, so the address connected to is the address that was checked;
 * TLS still verifies the certificate against the host name (SNI). Redirects
 * are never followed: undici's request() does not follow them.
 */
export class HttpTransport implements Transport {
  readonly destinationType = 'https' as const;
  private readonly agent: Agent;
  private readonly cap: number;
  /** answersUnder: the answers in flight by the signal that aborts them. */
  private readonly watching = new WeakMap<AbortSignal, Set<Answer>>();

  constructor(private readonly opts: HttpTransportOptions) {
    this.cap = opts.responseBodyCap ?? RESPONSE_BODY_CAP;
    const resolver = opts.resolver ?? systemResolver;
    const lookup = ((hostname: string, options: { all?: boolean; family?: number | string }, callback: (...args: unknown[]) => void) => {
      resolveChecked(hostname, opts.allowPrivate, resolver).then(
        (answers) => {
          const family = options.family === 'IPv4' ? 4 : options.family === 'IPv6' ? 6 : Number(options.family ?? 0);
          const usable = family ? answers.filter((a) => a.family === family) : answers;
          if (usable.length === 0) return callback(Object.assign(new Error(`${hostname} has no IPv${family} address`), { code: 'ENOTFOUND' }));
          if (options.all) callback(null, usable);
          else callback(null, usable[0].address, usable[0].family);
        },
        (err) => callback(err),
      );
    }) as unknown as LookupFunction;
    // One secure context for every connection: handing `ca` to each connect
    // would parse the whole root store again per TLS handshake.
    const secureContext =
      opts.ca === undefined ? undefined : createSecureContext({ ca: [...rootCertificates, ...(Array.isArray(opts.ca) ? opts.ca : [opts.ca])] });
    const connect = buildConnector({ timeout: opts.connectTimeoutMs, lookup, ...(secureContext ? { secureContext } : {}) });
    this.agent = new Agent({
      connect(options, callback) {
        // A literal IP never reaches lookup (net connects to it directly): check it here.
        if (isIP(options.hostname)) {
          const v = addressAllowed(options.hostname, opts.allowPrivate);
          if (!v.allowed) return callback(new SsrfRefusedError(options.hostname, options.hostname, v.reason), null);
        }
        return connect(options, callback);
      },
      headersTimeout: opts.timeoutMs,
      bodyTimeout: opts.timeoutMs,
      keepAliveTimeout: 4_000,
    });
  }

  async send(delivery: Sendable, signal: AbortSignal): Promise<AttemptResult> {
    const startedAt = new Date();
    const t0 = performance.now();
    const done = (r: Omit<AttemptResult, 'startedAt' | 'durationMs' | 'url'>, url: string | null): AttemptResult => ({
      startedAt,
      durationMs: Math.round(performance.now() - t0),
      url,
      ...r,
    });
    if (!delivery.capture || !delivery.url) return done({ errorClass: 'invalid_url', errorMessage: 'nothing to forward' }, delivery.url);
    let target: URL;
    let req: ReturnType<typeof buildForwardRequest>;
    try {
      req = buildForwardRequest(delivery.capture, delivery.url, delivery.methodOverride);
      target = new URL(req.url);
    } catch {
      return done({ errorClass: 'invalid_url', errorMessage: `not a valid URL: ${delivery.url}` }, delivery.url);
    }
    if (target.protocol !== 'https:') return done({ errorClass: 'invalid_url', errorMessage: 'forwards go to https:// URLs only' }, req.url);

    const answer = await this.exchange(target, req, signal);
    if (answer.statusCode === undefined) {
      const errorClass = answer.error instanceof AttemptTimeoutError ? 'timeout' : classifyError(answer.error);
      return done({ errorClass, errorMessage: describe(answer.error) }, req.url);
    }
    const { statusCode, headers } = answer;
    const responseHeaders: Array<[string, string]> = [];
    for (const [name, value] of Object.entries(headers)) {
      for (const v of Array.isArray(value) ? value : [value ?? '']) responseHeaders.push([name, v]);
    }
    const header = (name: string) => {
      const v = headers[name];
      return Array.isArray(v) ? v[0] : v;
    };
    let errorClass: ErrorClass | undefined;
    let errorMessage: string | undefined;
    if (statusCode >= 300 && statusCode < 400) {
      errorClass = 'redirect';
      errorMessage = `HTTP ${statusCode}: redirect${header('location') ? ` to ${header('location')}` : ''} not followed`;
    } else if (!isSuccess(statusCode)) {
      errorClass = 'http_status';
      errorMessage = `HTTP ${statusCode}`;
    } else if (answer.error !== undefined) {
      // the destination answered 2xx; a failure while reading the rest of its answer does not undo that
      errorMessage = `answer body not fully read: ${describe(answer.error)}`;
    }
    return done(
      {
        statusCode,
        errorClass,
        errorMessage,
        retryAfterSeconds: parseRetryAfter(header('retry-after')),
        responseHeaders,
        responseBody: answer.body,
        responseTruncated: answer.truncated,
      },
      req.url,
    );
  }

  /**
   * The answers in flight under `signal`, all aborted when it is: one
   * listener a signal (a worker's deliveries share one), not one a forward.
   */
  private answersUnder(signal: AbortSignal): Set<Answer> {
    const known = this.watching.get(signal);
    if (known) return known;
    const answers = new Set<Answer>();
    this.watching.set(signal, answers);
    signal.addEventListener('abort', () => { for (const a of answers) a.abort(new AttemptAbortedError()); }, { once: true });
    return answers;
  }

  /**
   * One request and its answer, read up to the cap, through undici's
   * dispatch API with a handler of our own (Answer) rather than
   * `request()`: that one builds, per request, an AbortSignal listener, an
   * async resource and a Readable stream of the answer, which a forward
   * reads in one or two chunks (about 15 µs of this process's 127 µs of
   * CPU a forward on PostgreSQL; docs/forwarding.md). Resolves, never
   * rejects; an attempt that ran out of time ends with an
   * AttemptTimeoutError as its error.
   */
  private exchange(target: URL, req: ReturnType<typeof buildForwardRequest>, signal: AbortSignal): Promise<Answer> {
    return new Promise<Answer>((resolve) => {
      // the answers under the same signal (none to join when it is already aborted)
      const watched = signal.aborted ? undefined : this.answersUnder(signal);
      const answer = new Answer(this.cap, (a) => {
        clearTimeout(timer);
        watched?.delete(answer);
        resolve(a);
      });
      // the whole attempt: connect, send, status line, headers and the capped body
      const timer = setTimeout(() => answer.abort(new AttemptTimeoutError(this.opts.timeoutMs)), this.opts.timeoutMs);
      if (!watched) return answer.abort(new AttemptAbortedError());
      watched.add(answer);
      try {
        this.agent.dispatch(
          { origin: target.origin, path: target.pathname + target.search, method: req.method, headers: req.headers, body: req.body.length > 0 ? req.body : null },
          answer,
        );
      } catch (err) {
        // undici refuses some requests synchronously (a header value HTTP does not allow)
        answer.onError(err as Error);
      }
    });
  }

  async close(): Promise<void> {
    await this.agent.close().catch(() => {});
  }
}

class AttemptTimeoutError extends Error {
  constructor(ms: number) {
    super(`no complete answer within ${ms} ms`);
    this.name = 'AttemptTimeoutError';
  }
}

class AttemptAbortedError extends Error {
  constructor() {
    super('the attempt was aborted: the worker is stopping');
    this.name = 'AttemptAbortedError';
  }
}

/** Stops reading an answer at the cap; never seen outside Answer. */
class CapReached extends Error {}

type Headers = Record<string, string | string[] | undefined>;

/**
 * An undici dispatch handler (its callback interface: onConnect, onHeaders,
 * onData, onComplete, onError) that collects one answer: the status and
 * headers of the final (non-1xx) head, and the body up to `cap` bytes.
 * At the cap it pauses the connection and aborts the request, so the rest
 * is never read (undici destroys the socket). Settles exactly once, with
 * no statusCode when no answer's head arrived (then `error` says why).
 */
class Answer {
  statusCode?: number;
  headers: Headers = {};
  body: Buffer = EMPTY;
  truncated = false;
  error?: unknown;
  private readonly read: CappedBody;
  private abortRequest: ((err: Error) => void) | null = null;
  /** Set by abort() before undici connected the request: handed to onConnect. */
  private pending: Error | null = null;
  private settled = false;

  constructor(
    cap: number,
    private readonly settle: (a: Answer) => void,
  ) {
    this.read = new CappedBody(cap);
  }

  /** Ends the exchange with `err` as its error. */
  abort(err: Error): void {
    if (this.settled) return;
    if (this.abortRequest) return this.abortRequest(err);
    // Not yet on a connection (still connecting, or queued behind others):
    // the attempt ends now, and onConnect aborts the request, unsent.
    this.pending = err;
    this.onError(err);
  }

  onConnect(abort: (err: Error) => void): void {
    if (this.pending) return abort(this.pending);
    this.abortRequest = abort;
  }

  onHeaders(statusCode: number, rawHeaders: Buffer[]): boolean {
    // 1xx heads (100 Continue, 103 Early Hints) precede the answer
    if (statusCode < 200) return true;
    this.statusCode = statusCode;
    this.headers = util.parseHeaders(rawHeaders) as Headers;
    return true;
  }

  onData(chunk: Buffer): boolean {
    if (this.truncated) return false;
    if (this.read.add(chunk)) return true;
    this.truncated = true;
    // pause (false), then abort once this callback has returned to undici's parser
    const abort = this.abortRequest;
    queueMicrotask(() => abort?.(new CapReached()));
    return false;
  }

  onComplete(): void {
    this.finish();
  }

  onError(err: Error): void {
    if (this.settled) return;
    if (!(err instanceof CapReached)) {
      this.error = err;
      // an answer cut short is marked truncated, as a capped one is
      if (this.statusCode !== undefined) this.truncated = true;
    }
    this.finish();
  }

  private finish(): void {
    if (this.settled) return;
    this.settled = true;
    this.body = this.read.bytes();
    this.settle(this);
  }
}

const EMPTY = Buffer.alloc(0);

/** A body read up to `cap` bytes, chunk by chunk: the transport's Answer and readCapped (the agent's forwarder). */
class CappedBody {
  private readonly chunks: Buffer[] = [];
  private size = 0;

  constructor(private readonly cap: number) {}

  /** Keeps what fits of `chunk`; false once the cap is reached and the rest is not to be read. */
  add(chunk: Buffer): boolean {
    const room = this.cap - this.size;
    if (chunk.length <= room) {
      this.chunks.push(chunk);
      this.size += chunk.length;
      return true;
    }
    if (room > 0) this.chunks.push(chunk.subarray(0, room));
    this.size = this.cap;
    return false;
  }

  bytes(): Buffer {
    return this.chunks.length === 1 ? this.chunks[0] : Buffer.concat(this.chunks);
  }
}

export async function readCapped(stream: AsyncIterable<Buffer>, cap: number): Promise<{ body: Buffer; truncated: boolean; error?: unknown }> {
  const read = new CappedBody(cap);
  try {
    for await (const chunk of stream) {
      // leaving the loop destroys the stream: the rest is never read
      if (!read.add(chunk)) return { body: read.bytes(), truncated: true };
    }
  } catch (error) {
    return { body: read.bytes(), truncated: true, error };
  }
  return { body: read.bytes(), truncated: false };
}

function codesOf(err: unknown): string[] {
  const codes: string[] = [];
  const seen = new Set<unknown>();
  const walk = (e: unknown) => {
    if (!e || typeof e !== 'object' || seen.has(e)) return;
    seen.add(e);
    const x = e as { code?: unknown; cause?: unknown; errors?: unknown };
    if (typeof x.code === 'string') codes.push(x.code);
    walk(x.cause);
    if (Array.isArray(x.errors)) x.errors.forEach(walk);
  };
  walk(err);
  return codes;
}

/** Maps a Node/undici error to the error class recorded with the attempt. */
export function classifyError(err: unknown): ErrorClass {
  const codes = codesOf(err);
  const has = (...c: string[]) => codes.some((code) => c.includes(code));
  if (has('ERR_WEIR_SSRF')) return 'ssrf_refused';
  // the request itself cannot be sent (a method override or header value HTTP does not allow)
  if (has('UND_ERR_INVALID_ARG', 'UND_ERR_NOT_SUPPORTED')) return 'invalid_request';
  if (has('UND_ERR_CONNECT_TIMEOUT', 'ETIMEDOUT')) return 'connect_timeout';
  if (has('UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT')) return 'timeout';
  if (has('ECONNREFUSED')) return 'connection_refused';
  if (has('ENOTFOUND', 'EAI_AGAIN', 'EAI_FAIL', 'ENODATA', 'EAI_NONAME')) return 'dns_error';
  if (codes.some((c) => /CERT|SSL|TLS|SELF_SIGNED|UNABLE_TO_|HOSTNAME|ALTNAME/.test(c))) return 'tls_error';
  if (err instanceof Error && /certificate|SSL|TLS/i.test(err.message)) return 'tls_error';
  return 'network_error';
}

function describe(err: unknown): string {
  const e = err as { message?: unknown; code?: unknown; errors?: unknown };
  let msg = typeof e?.message === 'string' ? e.message : '';
  if (!msg && Array.isArray(e?.errors)) msg = e.errors.map((x) => describe(x)).join('; ');
  if (!msg) msg = String(err);
  const code = codesOf(err)[0];
  if (code && !msg.includes(code)) msg = `${code}: ${msg}`;
  return msg.slice(0, 1000);
}
