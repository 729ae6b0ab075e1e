/**
 * The forwarding thread's side of ThreadedHttpTransport
 * (thread-transport.ts): an HttpTransport of its own, fed batches of
 * requests and answering with batches of results. It runs in a
 * worker_thread, so TLS, undici and the answers' parsing run beside the
 * main thread, which on PGlite also runs the database.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { HttpTransport, type HttpTransportOptions } from './http-transport.ts';
import { readJobs, ResultBatch, type ToThread } from './thread-protocol.ts';

if (!parentPort) throw new Error('http-thread.ts runs in a worker thread (ThreadedHttpTransport)');
const port = parentPort;
const transport = new HttpTransport(workerData as HttpTransportOptions);
/** One controller a signal of the main thread (by its number there), aborted when that signal is. */
const controllers = new Map<number, AbortController>();
/** Sends in flight a signal, so its controller goes when its last send does. */
const inFlight = new Map<number, number>();

let results = new ResultBatch();
let flushing = false;
function flush(): void {
  flushing = false;
  const { message, transfer } = results.message();
  results = new ResultBatch();
  port.postMessage(message, transfer);
}

port.on('message', (m: ToThread) => {
  if (m.type === 'abort') {
    // before any send of it too: a send posted in the same turn as the abort arrives after it
    let c = controllers.get(m.signal);
    if (!c) controllers.set(m.signal, (c = new AbortController()));
    c.abort();
    return;
  }
  if (m.type === 'close') {
    void transport.close().then(() => port.close());
    return;
  }
  for (const job of readJobs(m)) {
    let c = controllers.get(job.signal);
    if (!c) controllers.set(job.signal, (c = new AbortController()));
    inFlight.set(job.signal, (inFlight.get(job.signal) ?? 0) + 1);
    void transport.send(job.delivery, c.signal).then((r) => {
      const left = inFlight.get(job.signal)! - 1;
      if (left === 0) {
        inFlight.delete(job.signal);
        // an aborted signal's controller stays: a send posted before the abort arrived must still see it
        if (!c.signal.aborted) controllers.delete(job.signal);
      } else inFlight.set(job.signal, left);
      results.add(job.n, r);
      // every answer of this turn in one message
      if (!flushing) {
        flushing = true;
        setImmediate(flush);
      }
    });
  }
});
