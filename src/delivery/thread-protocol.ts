/**
 * What ThreadedHttpTransport (thread-transport.ts) and its forwarding
 * thread (http-thread.ts) send each other. Requests go in batches, one
 * message a turn of the main thread's event loop: each request's fields
 * in a flat array, and every body of the batch in one buffer that is
 * transferred, not copied again. Results come back the same way, flat.
 * A message's cost is mostly per object cloned, so neither side sends an
 * object a request.
 */
import type { ErrorClass } from './retry-policy.ts';
import type { AttemptResult, Sendable } from './transport.ts';

export type ToThread =
  | { type: 'send'; jobs: unknown[]; bodies: ArrayBuffer }
  /** Aborts every send under the main thread's signal number `signal`, those still to come included. */
  | { type: 'abort'; signal: number }
  | { type: 'close' };

/** Fields a request in `jobs`: n, signal, url, methodOverride, capture id (null: no capture), method, path, query, headers, verification, body length. */
const JOB_FIELDS = 12;
/** Fields a result: n, startedAt (epoch ms), durationMs, url, statusCode, errorClass, errorMessage, retryAfterSeconds, responseHeaders, the response body's length (-1: none; the bytes are in the bodies buffer), responseTruncated. */
const RESULT_FIELDS = 11;

/** The bodies of a batch, copied once, in order, into one buffer that is transferred with its message. */
class Bodies {
  private readonly parts: Buffer[] = [];
  private bytes = 0;

  add(body: Buffer): void {
    if (body.length === 0) return;
    this.parts.push(body);
    this.bytes += body.length;
  }

  pack(): ArrayBuffer {
    const all = new Uint8Array(this.bytes);
    let at = 0;
    for (const b of this.parts) {
      all.set(b, at);
      at += b.length;
    }
    return all.buffer;
  }
}

/** Reads a message's bodies back, in the order they were added: each a view of its buffer, no copy. */
class BodyReader {
  private at = 0;
  constructor(private readonly buffer: ArrayBuffer) {}

  next(length: number): Buffer {
    const b = Buffer.from(this.buffer, this.at, length);
    this.at += length;
    return b;
  }
}

/** A batch of requests being gathered on the main thread. */
export class JobBatch {
  private readonly jobs: unknown[] = [];
  private readonly bodies = new Bodies();

  /** `startBy`: the latest epoch ms the attempt may start at, when it may wait in the thread's queue; null: it never waits. */
  add(n: number, signal: number, d: Sendable, startBy: number | null): void {
    const c = d.capture;
    this.jobs.push(n, signal, d.url, d.methodOverride, c ? c.id : null, c?.method, c?.path, c?.query, c?.headers, c?.verification ?? null, c ? c.body.length : 0, startBy);
    if (c) this.bodies.add(c.body);
  }

  message(): { message: ToThread; transfer: ArrayBuffer[] } {
    const bodies = this.bodies.pack();
    return { message: { type: 'send', jobs: this.jobs, bodies }, transfer: [bodies] };
  }
}

export interface Job {
  n: number;
  signal: number;
  delivery: Sendable;
  /** JobBatch.add. */
  startBy: number | null;
}

/** The requests of a 'send' message; each body a view of the message's buffer. */
export function readJobs(m: Extract<ToThread, { type: 'send' }>): Job[] {
  const { jobs } = m;
  const bodies = new BodyReader(m.bodies);
  const out: Job[] = [];
  for (let i = 0; i < jobs.length; i += JOB_FIELDS) {
    const body = bodies.next(jobs[i + 10] as number);
    const id = jobs[i + 4] as string | null;
    out.push({
      n: jobs[i] as number,
      signal: jobs[i + 1] as number,
      startBy: jobs[i + 11] as number | null,
      delivery: {
        url: jobs[i + 2] as string | null,
        methodOverride: jobs[i + 3] as string | null,
        capture:
          id === null
            ? null
            : {
                id,
                method: jobs[i + 5] as string,
                path: jobs[i + 6] as string,
                query: jobs[i + 7] as string,
                headers: jobs[i + 8] as Array<[string, string]>,
                body,
                verification: jobs[i + 9] as 'verified' | 'failed' | null,
              },
      },
    });
  }
  return out;
}

/** A batch of results being gathered on the thread: like JobBatch, the answers' bodies in one transferred buffer. */
export class ResultBatch {
  private readonly results: unknown[] = [];
  private readonly bodies = new Bodies();
  private readonly notStarted: number[] = [];

  /** Request `n` was not started (Transport.sendQueued). */
  skip(n: number): void {
    this.notStarted.push(n);
  }

  /**
   * Request `n`'s result. Its body is copied into the batch's buffer: an
   * answer's body is a view of undici's read buffer, and a view sent as it
   * is would take its whole buffer along.
   */
  add(n: number, r: AttemptResult): void {
    const body = r.responseBody;
    this.results.push(n, r.startedAt.getTime(), r.durationMs, r.url, r.statusCode, r.errorClass, r.errorMessage, r.retryAfterSeconds, r.responseHeaders, body ? body.length : -1, r.responseTruncated);
    if (body) this.bodies.add(body);
  }

  message(): { message: FromThread; transfer: ArrayBuffer[] } {
    const bodies = this.bodies.pack();
    return { message: { results: this.results, bodies, notStarted: this.notStarted }, transfer: [bodies] };
  }
}

export interface FromThread {
  results: unknown[];
  bodies: ArrayBuffer;
  /** The numbers of the requests that were not started (ResultBatch.skip). */
  notStarted: number[];
}

/**
 * Each result of a batch with the number of its request (the main thread's
 * side), null for a request that was not started; each body a view of the
 * message's buffer.
 */
export function readResults(m: FromThread, each: (n: number, r: AttemptResult | null) => void): void {
  for (const n of m.notStarted) each(n, null);
  const { results: x } = m;
  const bodies = new BodyReader(m.bodies);
  for (let i = 0; i < x.length; i += RESULT_FIELDS) {
    const r: AttemptResult = { startedAt: new Date(x[i + 1] as number), durationMs: x[i + 2] as number, url: x[i + 3] as string | null };
    // only the fields the attempt had, as HttpTransport.send returns them
    if (x[i + 4] !== undefined) r.statusCode = x[i + 4] as number;
    if (x[i + 5] !== undefined) r.errorClass = x[i + 5] as ErrorClass;
    if (x[i + 6] !== undefined) r.errorMessage = x[i + 6] as string;
    if (x[i + 7] !== undefined) r.retryAfterSeconds = x[i + 7] as number;
    if (x[i + 8] !== undefined) r.responseHeaders = x[i + 8] as Array<[string, string]>;
    const length = x[i + 9] as number;
    if (length >= 0) r.responseBody = bodies.next(length);
    if (x[i + 10] !== undefined) r.responseTruncated = x[i + 10] as boolean;
    each(x[i] as number, r);
  }
}
