/**
 * The HTTPS transport on a thread of its own (WEIR_FORWARD_THREAD): the
 * same HttpTransport, run in a worker_thread (http-thread.ts), so its TLS,
 * undici and answer parsing leave the main thread. On PGlite the main
 * thread also runs the database, and the forwards and the database then
 * share one core while the other idles: with the transport on its own
 * thread the database has the main thread to itself (measured in
 * docs/forwarding.md, "The HTTPS transport on a thread of its own").
 *
 * Requests cross in batches (thread-protocol.ts): every send of one turn
 * of the event loop goes in one message, and the thread answers every
 * result of one of its turns in one message. Like HttpTransport, send()
 * resolves and never rejects: should the thread die, the sends it held
 * end as network errors (the worker's retries take them on, as after any
 * network error) and the next send starts a new thread.
 */
import { Worker } from 'node:worker_threads';
import type { HttpTransportOptions } from './http-transport.ts';
import { JobBatch, readResults, type FromThread, type ToThread } from './thread-protocol.ts';
import type { AttemptResult, Sendable, Transport } from './transport.ts';

/** HttpTransportOptions that can cross to a thread: everything but an injected resolver (a function). */
export type ThreadedHttpTransportOptions = Omit<HttpTransportOptions, 'resolver'> & {
  /** Transport.queueLimit: the thread runs at most this many attempts at once and queues the rest (sendQueued); unlimited when absent. */
  queueLimit?: number;
};

/** How long close() waits for the thread's connections to close before it ends the thread. */
const CLOSE_WAIT_MS = 5_000;

export class ThreadedHttpTransport implements Transport {
  readonly destinationType = 'https' as const;
  private thread: Worker | null = null;
  private readonly waiting = new Map<number, (r: AttemptResult | null) => void>();
  private next = 0;
  private batch: JobBatch | null = null;
  /** Each signal sends went under, by number; the numbers of those aborted, for a thread started after the abort. */
  private readonly signals = new WeakMap<AbortSignal, number>();
  private readonly aborted = new Set<number>();
  private nextSignal = 0;
  private closing: Promise<void> | null = null;

  constructor(private readonly opts: ThreadedHttpTransportOptions) {}

  get queueLimit(): number | undefined {
    return this.opts.queueLimit;
  }

  /** Whether the forwarding thread is running now (tests). */
  get running(): boolean {
    return this.thread !== null;
  }

  send(delivery: Sendable, signal: AbortSignal): Promise<AttemptResult> {
    // never answered as not started: without a startBy a request starts whatever its signal says (the transport answers an aborted one)
    return this.post(delivery, signal, null) as Promise<AttemptResult>;
  }

  sendQueued(delivery: Sendable, signal: AbortSignal, startBy: number): Promise<AttemptResult | null> {
    return this.post(delivery, signal, startBy);
  }

  private post(delivery: Sendable, signal: AbortSignal, startBy: number | null): Promise<AttemptResult | null> {
    if (this.closing) return Promise.resolve(failed(delivery, 'the transport is closed'));
    const sig = this.signalNumber(signal);
    const n = this.next++;
    if (!this.batch) {
      this.batch = new JobBatch();
      queueMicrotask(() => this.flush());
    }
    this.batch.add(n, sig, delivery, startBy);
    return new Promise((resolve) => this.waiting.set(n, resolve));
  }

  async close(): Promise<void> {
    this.closing ??= (async () => {
      const thread = this.thread;
      if (!thread) return;
      const exited = new Promise<void>((resolve) => thread.once('exit', () => resolve()));
      thread.postMessage({ type: 'close' } satisfies ToThread);
      const force = setTimeout(() => void thread.terminate(), CLOSE_WAIT_MS);
      await exited;
      clearTimeout(force);
    })();
    return this.closing;
  }

  private signalNumber(signal: AbortSignal): number {
    const known = this.signals.get(signal);
    if (known !== undefined) return known;
    const sig = this.nextSignal++;
    this.signals.set(signal, sig);
    const abort = () => {
      this.aborted.add(sig);
      this.thread?.postMessage({ type: 'abort', signal: sig } satisfies ToThread);
    };
    if (signal.aborted) abort();
    else signal.addEventListener('abort', abort, { once: true });
    return sig;
  }

  private flush(): void {
    const batch = this.batch!;
    this.batch = null;
    const thread = this.thread ?? this.start();
    const { message, transfer } = batch.message();
    thread.ref();
    thread.postMessage(message, transfer);
  }

  private start(): Worker {
    const thread = spawn(this.opts);
    this.thread = thread;
    for (const sig of this.aborted) thread.postMessage({ type: 'abort', signal: sig } satisfies ToThread);
    thread.on('message', (m: FromThread) => {
      readResults(m, (n, r) => {
        const resolve = this.waiting.get(n);
        this.waiting.delete(n);
        resolve?.(r);
      });
      // idle, the thread does not keep the process alive (a running Weir has its listeners)
      if (this.waiting.size === 0) thread.unref();
    });
    let why = 'it exited';
    thread.on('error', (err) => (why = err.message));
    thread.on('exit', () => {
      if (this.thread === thread) this.thread = null;
      // whatever it held never answered: network errors, retried as any other
      for (const [n, resolve] of this.waiting) {
        this.waiting.delete(n);
        resolve(failed(null, `the forwarding thread stopped (${why}) before the answer arrived`));
      }
    });
    return thread;
  }
}

function failed(delivery: Sendable | null, message: string): AttemptResult {
  return { startedAt: new Date(), durationMs: 0, url: delivery?.url ?? null, errorClass: 'network_error', errorMessage: message };
}

/**
 * The forwarding thread. Run from the TypeScript sources (npm start, the
 * tests), the thread registers tsx before it loads http-thread.ts, as
 * bin/weir.mjs does for the main thread (hooks registered there do not
 * reach a worker thread); from dist/ it loads the compiled file.
 */
function spawn(opts: ThreadedHttpTransportOptions): Worker {
  if (!import.meta.url.endsWith('.ts')) return new Worker(new URL('./http-thread.js', import.meta.url), { workerData: opts });
  const tsx = import.meta.resolve('tsx/esm/api');
  const entry = new URL('./http-thread.ts', import.meta.url).href;
  const code = `import(${JSON.stringify(tsx)}).then((t) => { t.register(); return import(${JSON.stringify(entry)}); });`;
  return new Worker(code, { eval: true, workerData: opts });
}
