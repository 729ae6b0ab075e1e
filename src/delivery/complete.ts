import type { Queryable } from '../db/db.ts';
import { newId } from '../db/ids.ts';
import { outcomeConcernsIncidents, RECORD_OUTCOMES_FOR_INCIDENTS } from '../incidents/record.ts';
import { BATCH_MARKS, CANCELLED_ERROR } from './replay-batch.ts';
import type { Decision } from './retry-policy.ts';
import { SUPERSEDE_WAITING_AFTER_REPLAY } from './supersede.ts';
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

const INPUT_AND_ATTEMPT = `with input as (
       select * from unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::int[], $5::timestamptz[], $6::int[], $7::text[], $8::int[],
                            $9::text[], $10::text[], $11::bool[], $12::text[], $13::text[], $14::text[], $15::float8[], $16::text[], $17::uuid[],
                            $22::text[], $23::text[])
         as i(attempt_id, delivery_id, organization_id, attempt_number, started_at, duration_ms, url, status_code,
              response_headers, response_body_hex, truncated, error_class, error_message, status, delay_s, last_error, lease_id,
              transformation_hash, sent_request)
     ),
     attempt as (
       insert into delivery_attempts (id, delivery_id, organization_id, attempt_number, node, started_at, duration_ms, url,
                                      status_code, response_headers, response_body, response_body_truncated, error_class, error_message,
                                      transformation_hash, sent_request)
       select attempt_id, delivery_id, organization_id, attempt_number, $18, started_at, duration_ms, url,
              status_code, response_headers::jsonb, decode(response_body_hex, 'hex'), truncated, error_class, error_message,
              transformation_hash, sent_request::jsonb
         from input
        -- a delivery deleted meanwhile (its endpoint or destination was deleted) keeps no history
        where exists (select 1 from deliveries d where d.id = input.delivery_id)
     )`;

// Another try ($19 held, $20 cancelled: replay-batch.ts BATCH_MARKS) keeps a
// paused batch's mark, and ends a cancelled batch's delivery failed.
const MOVE = `update deliveries d
        set status = case when i.status = 'pending' and d.next_attempt_at = $20::timestamptz then 'failed' else i.status end,
            attempt_count = d.attempt_count + 1,
            next_attempt_at = case when i.status = 'pending' and d.next_attempt_at < $19::timestamptz
                                   then now() + i.delay_s * interval '1 second' else d.next_attempt_at end,
            paced_slot = null, lease_until = null, leased_by = null, lease_id = null,
            last_status_code = i.status_code,
            last_error = case when i.status = 'pending' and d.next_attempt_at = $20::timestamptz then $21 else i.last_error end,
            last_attempt_at = i.started_at, updated_at = now()
       from input i
      where d.id = i.delivery_id and d.lease_id = i.lease_id and d.status = 'in_flight'`;

/**
 * The completion statement, with and without recording outcomes for
 * incidents. Recording costs every outcome (the whole moved row, a lookup
 * of its failure) although it concerns few, so a group of outcomes none of
 * which concerns incidents (outcomeConcernsIncidents: first-attempt
 * successes of capture deliveries) runs without it.
 */
const COMPLETE_SQL = {
  plain: `${INPUT_AND_ATTEMPT}
     ${MOVE}
      returning d.id`,
  incidents: `${INPUT_AND_ATTEMPT},
     moved as (
     ${MOVE}
      returning d.*
     ),
     -- incidents see each outcome in this same statement (crash-safe, counted once)
     ${RECORD_OUTCOMES_FOR_INCIDENTS},
     -- a replay that succeeded ends its pair's waiting retries (issue 28; supersede.ts)
     ${SUPERSEDE_WAITING_AFTER_REPLAY}
     select id from moved`,
};

/**
 * Records attempts and moves their deliveries on, for any number of
 * outcomes, in ONE statement (one implicit transaction, one commit): each
 * attempt row is always written, because the attempt happened; its
 * delivery changes only while the lease it was claimed with still holds.
 * Returns the ids of the deliveries updated (a missing id: the lease
 * expired and another worker owns that delivery now).
 */
export async function completeAttempts(db: Queryable, outcomes: readonly Outcome[], node: string): Promise<Set<string>> {
  if (outcomes.length === 0) return new Set();
  const col = <T>(f: (o: Outcome) => T) => outcomes.map(f);
  const incidents = outcomes.some((o) => outcomeConcernsIncidents(o.decision.status, o.delivery.replayBatchId, o.delivery.attemptNumber));
  const { rows } = await db.query<{ id: string }>(
    incidents ? COMPLETE_SQL.incidents : COMPLETE_SQL.plain,
    [
      col((o) => newId(o.result.startedAt.getTime())),
      col((o) => o.delivery.id),
      col((o) => o.delivery.organizationId),
      col((o) => o.delivery.attemptNumber),
      col((o) => o.result.startedAt.toISOString()),
      col((o) => o.result.durationMs),
      col((o) => o.result.url),
      col((o) => o.result.statusCode ?? null),
      // JSON writes NUL as the escape \u0000, which jsonb refuses too
      col((o) => (o.result.responseHeaders ? JSON.stringify(o.result.responseHeaders).replace(/\\u0000/g, '\\ufffd') : null)),
      col((o) => (o.result.responseBody ? o.result.responseBody.toString('hex') : null)),
      col((o) => o.result.responseTruncated ?? false),
      col((o) => o.result.errorClass ?? null),
      col((o) => clean(o.result.errorMessage)),
      col((o) => o.decision.status),
      col((o) => (o.decision.status === 'pending' ? o.decision.delaySeconds : 0)),
      col((o) => clean(lastErrorOf(o))),
      col((o) => o.delivery.leaseId),
      node,
      ...BATCH_MARKS,
      CANCELLED_ERROR,
      // src/transformations/run.ts: the code version an attempt ran and what it sent
      col((o) => o.result.transformationHash ?? null),
      col((o) => (o.result.sentRequest === undefined ? null : JSON.stringify(o.result.sentRequest))),
    ],
  );
  return new Set(rows.map((r) => r.id));
}

/**
 * Group commit for outcomes: attempts finishing while a write is running
 * wait and go together in the next statement, so under load one commit
 * records many attempts (as the ingest batcher does for captures) and at
 * low load each is written at once.
 */
export class CompletionBatcher {
  private queue: Array<{ outcome: Outcome; resolve: (owned: boolean) => void; reject: (err: unknown) => void }> = [];
  private writing = false;

  constructor(
    private readonly db: Queryable,
    private readonly node: string,
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
