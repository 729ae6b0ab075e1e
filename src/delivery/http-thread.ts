/**
 * The forwarding thread's side of ThreadedHttpTransport
 * (thread-transport.ts): an HttpTransport of its own, fed batches of
 * requests and answering with batches of results. It runs in a
 * worker_thread, so TLS, undici and the answers' parsing run beside the
 * main thread, which on PGlite also runs the database.
 *
 * With a queue limit it runs at most that many attempts at once and starts
 * the next waiting one, first in first out, as each answer comes in: the
 * main thread may be inside a database call for milliseconds, and a send
 * slot that waited for it to read the answer would stand idle meanwhile
 * (docs/forwarding.md). A waiting request whose signal aborts, or whose
 * `startBy` passes before its turn, is answered as not started.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { HttpTransport } from './http-transport.ts';
import { readJobs, ResultBatch, type Job, type ToThread } from './thread-protocol.ts';
import type { ThreadedHttpTransportOptions } from './thread-transport.ts';

if (!parentPort) throw new Error('http-thread.ts runs in a worker thread (ThreadedHttpTransport)');
const port = parentPort;
const { queueLimit, ...options } = workerData as ThreadedHttpTransportOptions;
const transport = new HttpTransport(options);
const limit = queueLimit ?? Infinity;
/** One controller a signal of the main thread (by its number there), aborted when that signal is. */
const controllers = new Map<number, AbortController>();
/** Sends in flight a signal, so its controller goes when its last send does. */
const inFlight = new Map<number, number>();
/** Attempts running now, at most `limit`. */
let running = 0;
/** Requests waiting for one of the `limit` attempts, in arrival order. */
let queue: Job[] = [];

let results = new ResultBatch();
let flushing = false;
function flush(): void {
  flushing = false;
  const { message, transfer } = results.message();
  results = new ResultBatch();
  port.postMessage(message, transfer);
}
/** Every answer of this turn in one message. */
function answered(): void {
  if (!flushing) {
    flushing = true;
    setImmediate(flush);
  }
}

port.on('message', (m: ToThread) => {
  if (m.type === 'abort') {
    // before any send of it too: a send posted in the same turn as the abort arrives after it
    let c = controllers.get(m.signal);
    if (!c) controllers.set(m.signal, (c = new AbortController()));
    c.abort();
    // its waiting requests with a start deadline (sendQueued) are answered now, not when a slot frees;
    // a plain send() is never answered as not started: it starts in its turn, and the transport answers it aborted
    const skipped = (job: Job) => job.signal === m.signal && job.startBy !== null;
    if (queue.some(skipped)) {
      for (const job of queue) if (skipped(job)) results.skip(job.n);
      queue = queue.filter((job) => !skipped(job));
      answered();
    }
    return;
  }
  if (m.type === 'close') {
    void transport.close().then(() => port.close());
    return;
  }
  for (const job of readJobs(m)) {
    if (running < limit) start(job);
    else queue.push(job);
  }
});

function start(job: Job): void {
  if (job.startBy !== null && (controllers.get(job.signal)?.signal.aborted || Date.now() > job.startBy)) {
    results.skip(job.n);
    answered();
    return;
  }
  let c = controllers.get(job.signal);
  if (!c) controllers.set(job.signal, (c = new AbortController()));
  inFlight.set(job.signal, (inFlight.get(job.signal) ?? 0) + 1);
  running++;
  void transport.send(job.delivery, c.signal).then((r) => {
    running--;
    const left = inFlight.get(job.signal)! - 1;
    if (left === 0) {
      inFlight.delete(job.signal);
      // an aborted signal's controller stays: a send posted before the abort arrived must still see it
      if (!c.signal.aborted) controllers.delete(job.signal);
    } else inFlight.set(job.signal, left);
    results.add(job.n, r);
    answered();
    while (running < limit && queue.length > 0) start(queue.shift()!);
  });
}
