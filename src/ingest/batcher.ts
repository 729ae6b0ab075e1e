import type { Logger } from 'pino';
import { sqlState, type Db } from '../db/db.ts';
import type { IngestMetrics } from '../metrics/metrics.ts';
import type { Capture } from '../requests/captures.ts';
import { announceLateCaptures, LATE_NOTICE_MS } from '../requests/late-captures.ts';
import type { Handoff } from '../delivery/handoff.ts';
import { storeCaptures, type StoreOutcome } from './store.ts';

export type { StoreOutcome } from './store.ts';

export interface BatcherOptions {
  /** How long the first capture of a batch waits for company (config.captureBatchMs). */
  batchMs: number;
  /**
   * With batchMs 0: how many turns of the event loop a group gathers for
   * (default 1). 2 on PGlite, whose database runs on this thread: a group
   * blocks the loop while it is stored, and the second turn reads the
   * requests that arrived meanwhile, so groups are bigger and the database's
   * fixed cost per group is paid less often (about 7% more captures/s).
   */
  turns?: number;
  /** Batches committing at once: 1 on PGlite (one connection), 2 on PostgreSQL. */
  maxInFlight: number;
  /**
   * A further batch starts while others commit only if each of those carries
   * at least this many body bytes (default 1 MiB): small captures gather into
   * one bigger group per commit, while a large upload that takes long to
   * write does not hold everyone else back.
   */
  heavyBatchBytes?: number;
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
 * a WAL flush (an fsync) and a round trip whether it carries one row or five
 * hundred. So captures travel in groups: a group leaves at the end of the
 * event-loop turn in which its first capture arrived (every request whose
 * bytes came in that turn joins it), or after WEIR_CAPTURE_BATCH_MS when
 * that is set above 0; it is stored by ONE statement (src/ingest/store.ts)
 * and only then does every sender in it get its 2xx. While a group is being
 * committed the next one gathers everything that arrives meanwhile and
 * leaves the moment the database is free, so groups grow with load instead
 * of commits queueing up: an idle server answers in one commit's time, a
 * busy one commits fewer, bigger groups. The trade-off is that a request
 * waits for the commit of its group (and, under load, of the group before
 * it), and in return the database does one flush per group instead of one
 * per request; without it durable capture would be bounded by fsyncs per
 * second.
 */
export class CaptureBatcher {
  /** This node's HTTPS worker, once it runs: fresh deliveries it has room for are leased to it by the capture statement (src/delivery/handoff.ts). */
  handoff: Handoff | undefined;
  private queue: Pending[] = [];
  private queuedBytes = 0;
  private inFlight = 0;
  /** Batches in flight under heavyBatchBytes. */
  private lightInFlight = 0;
  private due = false;
  private timer: NodeJS.Timeout | undefined;
  private immediate: NodeJS.Immediate | undefined;
  private closed = false;
  private idle: (() => void) | undefined;
  private readonly heavyBatchBytes: number;
  private readonly maxBatchRows: number;
  private readonly maxBatchBytes: number;
  private readonly maxQueuedRows: number;
  private readonly maxQueuedBytes: number;

  constructor(
    private readonly db: Db,
    private readonly opts: BatcherOptions,
    private readonly logger?: Logger,
    private readonly metrics?: Pick<IngestMetrics, 'group'>,
  ) {
    this.heavyBatchBytes = opts.heavyBatchBytes ?? 1024 * 1024;
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
      } else {
        this.schedule();
      }
    });
  }

  /**
   * Makes the queue due: at the end of this turn of the event loop (after
   * every request whose bytes arrived in it) or of the `turns`-th, or after
   * batchMs when one is set.
   */
  private schedule(): void {
    if (this.due || this.timer || this.immediate) return;
    const fire = () => {
      this.timer = undefined;
      this.immediate = undefined;
      this.due = true;
      this.pump();
    };
    if (this.opts.batchMs > 0) {
      this.timer = setTimeout(fire, this.opts.batchMs);
      return;
    }
    let turns = this.opts.turns ?? 1;
    const turn = () => {
      if (--turns > 0) this.immediate = setImmediate(turn);
      else fire();
    };
    this.immediate = setImmediate(turn);
  }

  /** Commits whatever is queued, waits for batches in flight, then refuses new captures. */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    clearImmediate(this.immediate);
    this.timer = undefined;
    this.immediate = undefined;
    this.due = true;
    this.pump();
    if (this.queue.length === 0 && this.inFlight === 0) return;
    await new Promise<void>((resolve) => (this.idle = resolve));
  }

  private pump(): void {
    while (this.due && this.queue.length > 0 && this.inFlight < this.opts.maxInFlight && this.lightInFlight === 0) {
      const { batch, bytes } = this.take();
      const light = bytes < this.heavyBatchBytes;
      this.inFlight++;
      if (light) this.lightInFlight++;
      void this.flush(batch, light);
    }
    if (this.queue.length === 0) {
      this.due = this.closed;
      if (this.inFlight === 0 && this.idle) this.idle();
    }
  }

  private take(): { batch: Pending[]; bytes: number } {
    let n = 0;
    let bytes = 0;
    while (n < this.queue.length && n < this.maxBatchRows && (n === 0 || bytes + this.queue[n].capture.body.length <= this.maxBatchBytes)) {
      bytes += this.queue[n].capture.body.length;
      n++;
    }
    this.queuedBytes -= bytes;
    return { batch: this.queue.splice(0, n), bytes };
  }

  private async flush(batch: Pending[], light: boolean): Promise<void> {
    const results = await this.commit(batch);
    this.metrics?.group(batch.length);
    // Free the slot and send the next group BEFORE answering this one, so
    // the database works on it while the answers are written.
    this.inFlight--;
    if (light) this.lightInFlight--;
    this.pump();
    batch.forEach((p, i) => {
      const r = results[i];
      if (r.ok) p.resolve(r.outcome);
      else p.reject(r.error);
    });
  }

  /**
   * A group that took longer than LATE_NOTICE_MS from its first arrival to
   * its commit is announced to every node's live tail before anyone in it is
   * answered (src/requests/late-captures.ts). Should the notice fail, the
   * captures are stored all the same and are answered: forwarding a retried
   * duplicate would cost more than a capture the live tail does not show
   * (the list API has it).
   */
  private async noticeIfLate(batch: Pending[], outcomes: StoreOutcome[]): Promise<void> {
    let oldest = Infinity;
    for (const p of batch) oldest = Math.min(oldest, p.capture.received_at.getTime());
    if (Date.now() - oldest <= LATE_NOTICE_MS) return;
    const late = batch.filter((_, i) => outcomes[i] === 'stored').map((p) => p.capture);
    try {
      await announceLateCaptures(this.db, late);
      this.logger?.warn({ rows: late.length, ms: Date.now() - oldest }, 'a capture group committed late; the live tail was told');
    } catch (err) {
      this.logger?.error({ err, rows: late.length }, 'a capture group committed late and the live tail could not be told; the list API has them');
    }
  }

  private async commit(batch: Pending[]): Promise<Array<{ ok: true; outcome: StoreOutcome } | { ok: false; error: unknown }>> {
    try {
      const outcomes = await storeCaptures(this.db, batch.map((p) => p.capture), this.handoff);
      await this.noticeIfLate(batch, outcomes);
      return outcomes.map((outcome) => ({ ok: true, outcome }));
    } catch (error) {
      // A data or constraint error is about some row, not the database: retry
      // the rows one by one so one poisonous request cannot fail its batch.
      const state = sqlState(error) ?? '';
      if (batch.length > 1 && (state.startsWith('22') || state.startsWith('23'))) {
        this.logger?.warn({ err: error, rows: batch.length }, 'capture batch failed on a row; retrying its rows one by one');
        const results = [];
        for (const p of batch) results.push(...(await this.commit([p])));
        return results;
      }
      this.logger?.error({ err: error, rows: batch.length }, 'capture batch failed; answering 503');
      return batch.map(() => ({ ok: false, error }));
    }
  }
}
