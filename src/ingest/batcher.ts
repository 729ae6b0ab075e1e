import type { Logger } from 'pino';
import { sqlState, type Db, type Queryable } from '../db/db.ts';
import { enqueueDeliveries } from '../delivery/enqueue.ts';
import { insertCaptures, type BodyTransport, type Capture } from '../requests/captures.ts';

/**
 * What became of one capture:
 * - stored: committed (with its deliveries); only now may the sender get a 2xx;
 * - endpoint_gone: the endpoint was deleted after the slug was looked up (404);
 * - endpoint_paused: it was paused after the slug was looked up (423);
 * - endpoint_busy: the endpoint row is locked by a delete in progress (503, retry);
 * - overloaded: too much is already waiting for the database (503, retry).
 * A database failure rejects the promise (503): never an acknowledgement.
 */
export type StoreOutcome = 'stored' | 'endpoint_gone' | 'endpoint_paused' | 'endpoint_busy' | 'overloaded';

export interface BatcherOptions {
  /** How long the first capture of a batch waits for company (config.captureBatchMs). */
  batchMs: number;
  /** Batches committing at once: 1 on PGlite (one connection), a few on PostgreSQL. */
  maxInFlight: number;
  maxBatchRows?: number;
  maxBatchBytes?: number;
  /** Bound on what waits in memory when the database is slow or down. */
  maxQueuedRows?: number;
  maxQueuedBytes?: number;
}

interface Pending {
  capture: Capture;
  resolve(outcome: StoreOutcome): void;
  reject(err: unknown): void;
}

/**
 * Group commit. A durable acknowledgement needs a commit, and a commit costs
 * a WAL flush (an fsync) whether it carries one row or five hundred. So
 * captures arriving within one short tick (WEIR_CAPTURE_BATCH_MS, default
 * 2 ms) share one transaction: one multi-row INSERT plus the delivery rows,
 * one commit, then every sender in the batch gets its 2xx. The trade-off is
 * latency for throughput: each request waits up to one tick plus the batch's
 * commit, and in return the database does one flush per tick instead of one
 * per request. While the maximum number of batches is committing, new
 * captures keep queueing and leave together with the next free slot, so
 * batches grow with load instead of queueing commits.
 */
export class CaptureBatcher {
  private queue: Pending[] = [];
  private queuedBytes = 0;
  private inFlight = 0;
  private due = false;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;
  private idle: (() => void) | undefined;
  /** Counters for operators and the benchmark: batches committed, captures in them, milliseconds spent in their transactions. */
  readonly stats = { batches: 0, captures: 0, commitMs: 0 };
  private readonly transport: BodyTransport;
  private readonly maxBatchRows: number;
  private readonly maxBatchBytes: number;
  private readonly maxQueuedRows: number;
  private readonly maxQueuedBytes: number;

  constructor(
    private readonly db: Db,
    private readonly opts: BatcherOptions,
    private readonly logger?: Logger,
  ) {
    this.transport = db.kind === 'pglite' ? 'hex' : 'binary';
    this.maxBatchRows = opts.maxBatchRows ?? 500;
    this.maxBatchBytes = opts.maxBatchBytes ?? 8 * 1024 * 1024;
    this.maxQueuedRows = opts.maxQueuedRows ?? 20_000;
    this.maxQueuedBytes = opts.maxQueuedBytes ?? 256 * 1024 * 1024;
  }

  /** Resolves once the capture is committed (or with why it was not); rejects on a database failure. */
  submit(capture: Capture): Promise<StoreOutcome> {
    const size = capture.body.length;
    if (this.closed) return Promise.reject(new Error('capture batcher is closed'));
    if (this.queue.length >= this.maxQueuedRows || (this.queue.length > 0 && this.queuedBytes + size > this.maxQueuedBytes)) {
      return Promise.resolve('overloaded');
    }
    return new Promise<StoreOutcome>((resolve, reject) => {
      this.queue.push({ capture, resolve, reject });
      this.queuedBytes += size;
      if (this.queue.length >= this.maxBatchRows || this.queuedBytes >= this.maxBatchBytes) {
        this.due = true;
        this.pump();
      } else if (!this.timer && !this.due) {
        this.timer = setTimeout(() => {
          this.timer = undefined;
          this.due = true;
          this.pump();
        }, this.opts.batchMs);
      }
    });
  }

  /** Commits whatever is queued, waits for batches in flight, then refuses new captures. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.due = true;
    this.pump();
    if (this.queue.length === 0 && this.inFlight === 0) return;
    await new Promise<void>((resolve) => (this.idle = resolve));
  }

  private pump(): void {
    while (this.due && this.queue.length > 0 && this.inFlight < this.opts.maxInFlight) {
      const batch = this.take();
      this.inFlight++;
      void this.flush(batch).finally(() => {
        this.inFlight--;
        this.pump();
      });
    }
    if (this.queue.length === 0) {
      this.due = this.closed;
      if (this.inFlight === 0 && this.idle) this.idle();
    }
  }

  private take(): Pending[] {
    let n = 0;
    let bytes = 0;
    while (n < this.queue.length && n < this.maxBatchRows && (n === 0 || bytes + this.queue[n].capture.body.length <= this.maxBatchBytes)) {
      bytes += this.queue[n].capture.body.length;
      n++;
    }
    this.queuedBytes -= bytes;
    return this.queue.splice(0, n);
  }

  private async flush(batch: Pending[]): Promise<void> {
    try {
      const started = performance.now();
      const outcomes = await this.db.transaction((tx) => commitCaptures(tx, batch.map((p) => p.capture), this.transport));
      this.stats.commitMs += performance.now() - started;
      this.stats.batches++;
      this.stats.captures += batch.length;
      batch.forEach((p, i) => p.resolve(outcomes[i]));
    } catch (err) {
      // A data or constraint error is about some row, not the database: retry
      // the rows one by one so one poisonous request cannot fail its batch.
      const state = sqlState(err) ?? '';
      if (batch.length > 1 && (state.startsWith('22') || state.startsWith('23'))) {
        this.logger?.warn({ err, rows: batch.length }, 'capture batch failed on a row; retrying its rows one by one');
        for (const p of batch) await this.flush([p]);
        return;
      }
      this.logger?.error({ err, rows: batch.length }, 'capture batch failed; answering 503');
      for (const p of batch) p.reject(err);
    }
  }
}

/**
 * The capture transaction: insert the captures whose endpoint is still there
 * and not paused (insertCaptures checks and locks the endpoints in the same
 * statement), then enqueue their deliveries in the same transaction
 * (src/delivery/enqueue.ts), so a capture never commits without them.
 */
export async function commitCaptures(tx: Queryable, captures: readonly Capture[], transport: BodyTransport): Promise<StoreOutcome[]> {
  const live = await insertCaptures(tx, captures, transport);
  const outcome = (endpointId: string): StoreOutcome | undefined => {
    const e = live.get(endpointId);
    return e === undefined ? undefined : e.paused ? 'endpoint_paused' : 'stored';
  };
  const missing = [...new Set(captures.map((c) => c.endpoint_id))].filter((id) => !live.has(id));
  let busy = new Set<string>();
  if (missing.length > 0) {
    // Absent from the locked read: deleted (404), or locked by a delete still
    // running (503, the sender retries and then gets the right answer).
    const { rows } = await tx.query<{ id: string }>('select id from endpoints where id = any($1::uuid[])', [missing]);
    busy = new Set(rows.map((r) => r.id));
  }
  const outcomes = captures.map((c) => outcome(c.endpoint_id) ?? (busy.has(c.endpoint_id) ? 'endpoint_busy' : 'endpoint_gone'));
  await enqueueDeliveries(
    tx,
    captures.filter((_, i) => outcomes[i] === 'stored').map((c) => ({ id: c.id, organizationId: c.organization_id, endpointId: c.endpoint_id, receivedAt: c.received_at })),
  );
  return outcomes;
}
