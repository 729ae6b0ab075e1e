import { boolArray, byteaArray, float8Array, int4Array, textArray, timestamptzArray, uuidArray } from '../db/binary-arrays.ts';
import type { Db, Queryable, Settings } from '../db/db.ts';
import { newId } from '../db/ids.ts';
import { outcomeConcernsIncidents } from '../incidents/record.ts';
import { COMPLETE_ATTEMPTS, COMPLETE_ATTEMPTS_RECORDING_INCIDENTS } from './complete-statement.ts';
import type { Decision } from './retry-policy.ts';
import type { AttemptResult, ClaimedDelivery } from './transport.ts';

export interface Outcome {
  delivery: ClaimedDelivery;
  result: AttemptResult;
  decision: Decision;
}

/** PostgreSQL text and jsonb refuse NUL characters; a destination's answer may contain them. */
const clean = (s: string | null | undefined) => (s == null ? null : s.replaceAll('\u0000', '\uFFFD'));

function lastErrorOf({ result, decision }: Outcome): string | null {
  if (decision.status === 'succeeded') return null;
  const parts = [result.errorMessage ?? result.errorClass ?? null, decision.status === 'pending' ? null : decision.reason].filter(Boolean);
  return parts.length > 0 ? parts.join('; ') : null;
}

/**
 * Records attempts and moves their deliveries on, for any number of
 * outcomes, in ONE statement (one implicit transaction, one commit): each
 * attempt row is written while its delivery exists, because the attempt
 * happened; its delivery changes only while the lease it was claimed with
 * still holds.
 * Returns the ids of the deliveries updated (a missing id: the lease
 * expired and another worker owns that delivery now).
 */
export async function completeAttempts(db: Db, outcomes: readonly Outcome[], node: string): Promise<Set<string>> {
  if (outcomes.length === 0) return new Set();
  const incidents = outcomes.some((o) => outcomeConcernsIncidents(o.decision.status, o.delivery.replayBatchId, o.delivery.attemptNumber));
  const [statement, name] = incidents ? [COMPLETE_ATTEMPTS_RECORDING_INCIDENTS, 'weir_complete_recording_incidents'] : [COMPLETE_ATTEMPTS, 'weir_complete'];
  const params = completionParams(outcomes, node);
  const { rows } = await db.withSettings(COMPLETE_SETTINGS, (q) => q.query<{ id: string }>(statement, params, { name }));
  return new Set(rows.map((r) => r.id));
}

/**
 * The completion statements are prepared (parsed and planned once per
 * connection: planning was a third of a completion's cost on PGlite), so
 * their one generic plan must not depend on statistics, which PGlite has
 * none of until table maintenance analyzes and PostgreSQL's may be minutes
 * old after a burst. Without these settings the generic plan read the
 * deliveries being moved through a sequential scan (tables under about
 * 20,000 rows) or through deliveries_leased, whose dead entries (one per
 * delivery ever in flight, until vacuum) it read on every completion, so
 * its cost grew with every forward since the last vacuum. With them, and
 * with the status check that no index matches (complete-statement.ts,
 * LEASED), every delivery is a primary-key probe whatever the table holds;
 * test/delivery/complete-statements.test.ts checks the generic plans. Not
 * CLAIM_SETTINGS: a completion's commit stays synchronous, so an attempt
 * acknowledged by a destination is not forgotten by a database crash.
 */
export const COMPLETE_SETTINGS: Settings = { enable_seqscan: 'off', enable_bitmapscan: 'off' };

/**
 * The parameters of the completion statements (complete-statement.ts) for
 * these outcomes: each column an array in binary (src/db/binary-arrays.ts),
 * so the database parses no literal and this builds none; the response
 * body as its bytes, not hex.
 */
export function completionParams(outcomes: readonly Outcome[], node: string): unknown[] {
  const col = <T>(f: (o: Outcome) => T) => outcomes.map(f);
  return [
    uuidArray(col((o) => newId(o.result.startedAt.getTime()))),
    uuidArray(col((o) => o.delivery.id)),
    uuidArray(col((o) => o.delivery.organizationId)),
    int4Array(col((o) => o.delivery.attemptNumber)),
    timestamptzArray(col((o) => o.result.startedAt)),
    int4Array(col((o) => o.result.durationMs)),
    textArray(col((o) => o.result.url)),
    int4Array(col((o) => o.result.statusCode ?? null)),
    // JSON writes NUL as the escape \u0000, which jsonb refuses too
    textArray(col((o) => (o.result.responseHeaders ? JSON.stringify(o.result.responseHeaders).replace(/\\u0000/g, '\\ufffd') : null))),
    byteaArray(col((o) => o.result.responseBody ?? null)),
    boolArray(col((o) => o.result.responseTruncated ?? false)),
    textArray(col((o) => o.result.errorClass ?? null)),
    textArray(col((o) => clean(o.result.errorMessage))),
    textArray(col((o) => o.decision.status)),
    float8Array(col((o) => (o.decision.status === 'pending' ? o.decision.delaySeconds : 0))),
    textArray(col((o) => clean(lastErrorOf(o)))),
    uuidArray(col((o) => o.delivery.leaseId)),
    node,
    // src/transformations/run.ts: the code version an attempt ran and what it sent
    textArray(col((o) => o.result.transformationHash ?? null)),
    textArray(col((o) => (o.result.sentRequest === undefined ? null : JSON.stringify(o.result.sentRequest)))),
    // the attempt's scheduled_at (complete-statement.ts, ATTEMPTS)
    float8Array(col((o) => o.delivery.pacedSlotMs ?? null)),
  ];
}

/**
 * Group commit for outcomes: attempts finishing while a write is running
 * wait and go together in the next statement, so under load one commit
 * records many attempts (as the ingest batcher does for captures). Without
 * a linger (below) an outcome at low load is written at once; with one, it
 * waits the linger first.
 */
export class CompletionBatcher {
  private queue: Array<{ outcome: Outcome; resolve: (owned: boolean) => void; reject: (err: unknown) => void }> = [];
  private writing = false;

  /**
   * `linger`: a batch smaller than `minBatch` waits `ms` for more outcomes
   * before it is written. A statement costs the same fixed part however
   * many outcomes it records (on PGlite about 0.9 ms of the thread the
   * forwards run on), so fewer, fuller writes leave more for the forwards.
   * The forwards themselves do not wait: a slot is free once its answer is
   * in (DeliveryWorker), and the lease holds until the record commits.
   */
  constructor(
    private readonly db: Db,
    private readonly node: string,
    private readonly linger: { minBatch: number; ms: number } | null = null,
    private readonly maxBatch = 256,
  ) {}

  /** Resolves once recorded: true while this worker still held the lease. */
  record(outcome: Outcome): Promise<boolean> {
    return new Promise((resolve, reject) => {
      this.queue.push({ outcome, resolve, reject });
      if (!this.writing) void this.drain();
    });
  }

  private async drain(): Promise<void> {
    this.writing = true;
    while (this.queue.length > 0) {
      // Yield to I/O first: answers that arrived while the last write ran
      // (PGlite runs on this thread and blocks it) join this batch.
      await new Promise((r) => setImmediate(r));
      const l = this.linger;
      if (l && this.queue.length < l.minBatch) await new Promise((r) => setTimeout(r, l.ms));
      const batch = this.queue.splice(0, this.maxBatch);
      try {
        const owned = await completeAttempts(this.db, batch.map((b) => b.outcome), this.node);
        for (const b of batch) b.resolve(owned.has(b.outcome.delivery.id));
      } catch (err) {
        if (batch.length === 1) {
          batch[0].reject(err);
          continue;
        }
        // one unwritable row must not lose the batch: write them one by one
        for (const b of batch) {
          await completeAttempts(this.db, [b.outcome], this.node).then(
            (owned) => b.resolve(owned.has(b.outcome.delivery.id)),
            (e) => b.reject(e),
          );
        }
      }
    }
    this.writing = false;
  }
}

/**
 * Ends a delivery that was not attempted (its capture is gone, or its
 * destination was disabled after it was queued): no attempt row, because
 * nothing was sent; the reason is on the delivery.
 */
export async function finishUnattempted(db: Queryable, d: ClaimedDelivery, errorMessage: string): Promise<boolean> {
  const { rows } = await db.query<{ id: string }>(
    `update deliveries
        set status = 'failed', paced_slot = null, lease_until = null, leased_by = null, lease_id = null,
            last_error = $3, updated_at = now()
      where id = $1::uuid and lease_id = $2::uuid and status = 'in_flight'
      returning id`,
    [d.id, d.leaseId, errorMessage],
  );
  return rows.length > 0;
}
