import type { Queryable } from '../db/db.ts';
import { idFloor } from '../db/ids.ts';
import { insertDeliveries, wakeWorkers, type NewDelivery } from './enqueue.ts';

/**
 * What the delivery engine offers paced replay batches (src/incidents/
 * replay.ts) and incident resolution, so that module never reads or
 * writes the delivery tables itself. A paced batch is ordinary deliveries
 * tagged with its replay_batch_id plus one replay_batch_pacing row: the
 * claim statement (claim.ts) hands its deliveries slots `60 s / rate`
 * apart from that row, on every node alike.
 */

/** Queues a paced batch: its pacing row (first slot now) and its deliveries; workers are woken on commit. */
export async function queuePacedBatch(tx: Queryable, batchId: string, requestsPerMinute: number, rows: readonly NewDelivery[]): Promise<void> {
  await tx.query(`insert into replay_batch_pacing (replay_batch_id, requests_per_minute, next_slot_at) values ($1::uuid, $2, now())`, [
    batchId,
    requestsPerMinute,
  ]);
  await insertDeliveries(tx, rows);
  await wakeWorkers(tx);
}

/**
 * Deletes the pacing rows of batches with nothing left to pace: no
 * delivery of theirs pending (held ones included) or in flight (a retry
 * of which would be paced). Nothing makes such a batch's deliveries wait
 * again, so the row is never needed again; and while no pacing row
 * exists, claims leave batch pacing out of their statement (claim.ts).
 * A batch's row and deliveries are inserted in one transaction, so a new
 * batch is never seen with a row and nothing waiting. Safe on every node at once.
 */
export async function endIdleBatchPacing(db: Queryable): Promise<number> {
  const { rowCount } = await db.query(
    `delete from replay_batch_pacing rp
      where not exists (select 1 from deliveries d
                         where d.replay_batch_id = rp.replay_batch_id and d.status in ('pending', 'in_flight'))`,
  );
  return rowCount;
}

/**
 * When a held delivery is due: never in practice. A date rather than
 * 'infinity', which drivers do not all turn into a Date, and which the
 * worker's wake-up timer (min(next_attempt_at)) must be able to read.
 */
export const HELD_UNTIL = '9999-01-01T00:00:00Z';

/**
 * What a delivery in flight carries in next_attempt_at when its batch was
 * cancelled while it was being sent (next_attempt_at means nothing to a
 * delivery in flight until it needs another try). Every statement that
 * takes a delivery out of flight for another try reads the two marks
 * (BATCH_MARKS): a held delivery stays held, a cancelled one ends failed.
 * So pause and cancel hold for what was in flight at the time too, in
 * whichever order the mark and the attempt's outcome commit (both update
 * the delivery's row, so one waits for the other and sees its result).
 */
export const CANCELLED_MARK = '9999-12-31T00:00:00Z';

/** The marks as the statements that read them take them: [held, cancelled]. */
export const BATCH_MARKS = [HELD_UNTIL, CANCELLED_MARK] as const;

/** The error a delivery of a cancelled batch ends with. */
export const CANCELLED_ERROR = 'the replay batch was cancelled';

/**
 * Parks a batch's deliveries (pause): waiting ones are due never, their
 * slots given back; one in flight finishes its attempt, and if it needs
 * another try, that try is held too (the mark above). Returns how many
 * are held.
 */
export async function holdBatch(db: Queryable, batchId: string): Promise<number> {
  const { rowCount } = await db.query(
    `update deliveries set next_attempt_at = $2, paced_slot = case when status = 'pending' then null else paced_slot end, updated_at = now()
      where replay_batch_id = $1::uuid and status in ('pending', 'in_flight')`,
    [batchId, HELD_UNTIL],
  );
  return rowCount;
}

/** Resumes a held batch: due now, paced again from now on; one in flight retries as usual if it must. */
export async function releaseBatch(db: Queryable, batchId: string): Promise<number> {
  await db.query(`update replay_batch_pacing set next_slot_at = now() where replay_batch_id = $1::uuid`, [batchId]);
  const { rowCount } = await db.query(
    `update deliveries set next_attempt_at = now(), paced_slot = case when status = 'pending' then null else paced_slot end, updated_at = now()
      where replay_batch_id = $1::uuid and (status = 'pending' or (status = 'in_flight' and next_attempt_at = $2))`,
    [batchId, HELD_UNTIL],
  );
  if (rowCount > 0) await wakeWorkers(db);
  return rowCount;
}

/**
 * Ends a batch's waiting deliveries (retries included) as failed (cancel)
 * and returns their ids; one in flight finishes its attempt and, if it
 * would need another try, ends failed instead (the mark above).
 */
export async function cancelBatch(db: Queryable, batchId: string): Promise<string[]> {
  await db.query(`update deliveries set next_attempt_at = $2, updated_at = now() where replay_batch_id = $1::uuid and status = 'in_flight'`, [
    batchId,
    CANCELLED_MARK,
  ]);
  const { rows } = await db.query<{ id: string }>(
    `update deliveries set status = 'failed', paced_slot = null, last_error = $2, updated_at = now()
      where replay_batch_id = $1::uuid and status = 'pending'
      returning id`,
    [batchId, CANCELLED_ERROR],
  );
  return rows.map((r) => r.id);
}

export interface BatchCounts {
  /** pending or in flight */
  waiting: number;
  succeeded: number;
  /** failed or dead */
  failed: number;
}

/** Where each batch's deliveries stand. */
export async function batchCounts(db: Queryable, batchIds: readonly string[]): Promise<Map<string, BatchCounts>> {
  const { rows } = await db.query<{ batch: string; waiting: number; succeeded: number; failed: number }>(
    `select replay_batch_id as batch,
            count(*) filter (where status in ('pending', 'in_flight'))::int as waiting,
            count(*) filter (where status = 'succeeded')::int as succeeded,
            count(*) filter (where status in ('failed', 'dead'))::int as failed
       from deliveries where replay_batch_id = any($1::uuid[]) group by replay_batch_id`,
    [batchIds],
  );
  const out = new Map<string, BatchCounts>();
  for (const id of batchIds) out.set(id, { waiting: 0, succeeded: 0, failed: 0 });
  for (const r of rows) out.set(r.batch, { waiting: r.waiting, succeeded: r.succeeded, failed: r.failed });
  return out;
}

/**
 * Whether each of the batch's last `n` attempts since it last started
 * running (replay_batches.running_since: created or resumed) failed; false
 * while it has made fewer than n since. Failures from before a pause do not
 * count against the resumed batch.
 */
export async function lastAttemptsAllFailed(db: Queryable, batchId: string, n: number): Promise<boolean> {
  const { rows } = await db.query<{ ok: boolean }>(
    `select a.error_class is null and a.status_code between 200 and 299 as ok
       from delivery_attempts a join deliveries d on d.id = a.delivery_id
      where d.replay_batch_id = $1::uuid
        and a.started_at >= coalesce((select running_since from replay_batches where id = $1::uuid), '-infinity')
      order by a.started_at desc limit $2`,
    [batchId, n],
  );
  return rows.length >= n && rows.every((r) => !r.ok);
}

/**
 * Whether a destination answered 2xx after `since`: a forward destination
 * by id, an endpoint's forward_url by its URL (on the given endpoints).
 * Only deliveries created from an hour before `since` are read (newest
 * first, stopping at the first success), so the check stays cheap however
 * long the destination's history is; an older delivery succeeding late on
 * a retry is not needed to see a recovery, newer traffic shows it.
 */
export async function succeededSince(
  db: Queryable,
  target: { forwardDestinationId: string | null; url: string | null; endpointIds: readonly string[] },
  since: Date,
): Promise<boolean> {
  const floor = idFloor(since.getTime() - 3_600_000);
  const { rows } = target.forwardDestinationId
    ? await db.query(DESTINATION_SUCCEEDED_SINCE, [target.forwardDestinationId, floor, since.toISOString()])
    : await db.query(FORWARD_URL_SUCCEEDED_SINCE, [target.endpointIds, target.url, floor, since.toISOString()]);
  return rows.length > 0;
}

/** succeededSince for a forward destination: a range of deliveries_destination (forward_destination_id, id). */
export const DESTINATION_SUCCEEDED_SINCE = `select 1 from deliveries
  where forward_destination_id = $1::uuid and id >= $2::uuid and status = 'succeeded' and last_attempt_at > $3
  limit 1`;

/** succeededSince for an endpoint's forward_url: a range of deliveries_endpoint (endpoint_id, id), never the whole history. */
export const FORWARD_URL_SUCCEEDED_SINCE = `select 1 from deliveries
  where endpoint_id = any($1::uuid[]) and forward_destination_id is null and url = $2
    and id >= $3::uuid and status = 'succeeded' and last_attempt_at > $4
  limit 1`;
