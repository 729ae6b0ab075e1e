import type { Db, Queryable } from '../db/db.ts';
import { idFloor } from '../db/ids.ts';
import { insertDeliveries, wakeWorkers, type NewDelivery } from './enqueue.ts';

/**
 * The replay batch lifecycle, in one place: create, pace, pause, resume,
 * cancel, finish. A batch (an incident's paced replay, src/incidents/
 * replay.ts, which chooses what to replay and narrates each step on the
 * incident) is one replay_batches row, ordinary deliveries tagged with its
 * id, one replay_batch_pacing row from which the claim statement (claim.ts)
 * hands its deliveries slots `60 s / rate` apart on every node alike, and
 * one replay_batch_progress row. Every statement that changes a batch's
 * state or holds, releases or ends its deliveries is here; the statements
 * that take a delivery out of flight (claim.ts, complete.ts) read the two
 * marks below.
 */

export const MIN_RATE = 1;
export const MAX_RATE = 6000;
/** The specification's cap on how long one batch may take. */
export const MAX_BATCH_MINUTES = 12 * 60;
/** A running batch pauses itself when this many of its attempts in a row failed. */
export const PAUSE_AFTER_FAILURES = 5;

export type BatchStatus = 'running' | 'paused' | 'cancelled' | 'finished';

export interface BatchRow {
  id: string;
  organization_id: string;
  incident_id: string;
  requests_per_minute: number;
  status: BatchStatus;
  queued_count: number;
  paused_reason: string | null;
  created_at: Date;
  finished_at: Date | null;
}

const BATCH_COLUMNS = 'b.id, b.organization_id, b.incident_id, b.requests_per_minute, b.status, b.queued_count, b.paused_reason, b.created_at, b.finished_at';

/**
 * Creates a batch, running: its row, its pacing row (first slot now), its
 * deliveries and their count; workers are woken on commit. The batch's
 * deliveries are counted here, in the transaction that inserts them: no
 * other statement inserts a delivery with an incident batch's id.
 */
export async function createReplayBatch(
  tx: Queryable,
  batch: { id: string; organizationId: string; incidentId: string; requestsPerMinute: number; createdBy: string },
  rows: readonly NewDelivery[],
): Promise<void> {
  await tx.query(
    `insert into replay_batches (id, organization_id, incident_id, requests_per_minute, queued_count, created_by, running_since)
     values ($1::uuid, $2::uuid, $3::uuid, $4, $5, $6::uuid, now())`,
    [batch.id, batch.organizationId, batch.incidentId, batch.requestsPerMinute, rows.length, batch.createdBy],
  );
  await tx.query(`insert into replay_batch_progress (replay_batch_id, waiting) values ($1::uuid, $2)`, [batch.id, rows.length]);
  await tx.query(`insert into replay_batch_pacing (replay_batch_id, requests_per_minute, next_slot_at) values ($1::uuid, $2, now())`, [
    batch.id,
    batch.requestsPerMinute,
  ]);
  await insertDeliveries(tx, rows);
  await wakeWorkers(tx);
}

export async function findReplayBatch(db: Queryable, organizationId: string, id: string, opts: { lock?: boolean } = {}): Promise<BatchRow | undefined> {
  const { rows } = await db.query<BatchRow>(
    `select ${BATCH_COLUMNS} from replay_batches b where b.id = $1::uuid and b.organization_id = $2::uuid${opts.lock ? ' for update' : ''}`,
    [id, organizationId],
  );
  return rows[0];
}

/** The replay_batches changes below, with the batch as it was before. */
export type BatchChange<T = object> = ({ ok: true; batch: BatchRow } & T) | { ok: false; reason: 'not_found' | 'wrong_state'; status?: string };

/** Locks the batch and checks it is in one of `from`. */
async function lockBatch(tx: Queryable, organizationId: string, id: string, from: readonly BatchStatus[]) {
  const b = await findReplayBatch(tx, organizationId, id, { lock: true });
  if (!b) return { ok: false, reason: 'not_found' } as const;
  if (!from.includes(b.status)) return { ok: false, reason: 'wrong_state', status: b.status } as const;
  return { ok: true, batch: b } as const;
}

/**
 * Pauses a running batch (a member's request): its waiting deliveries are
 * held, slots given back; one in flight finishes its attempt and a retry
 * it needs is held too. Resume runs it again at its rate. Call in a transaction.
 */
export async function pauseReplayBatch(tx: Queryable, organizationId: string, id: string, reason: string): Promise<BatchChange<{ held: number }>> {
  const r = await lockBatch(tx, organizationId, id, ['running']);
  if (!r.ok) return r;
  await setStatus(tx, r.batch.id, 'paused', reason);
  return { ok: true, batch: r.batch, held: await holdBatch(tx, r.batch.id) };
}

/**
 * Resumes a paused batch at its rate, from now on. Its run of failures
 * starts again from zero, and an attempt that started before now (one that
 * was in flight at the pause, whose outcome may be folded after this)
 * never counts in it (foldProgress), so failures from before the pause
 * cannot pause it again. Call in a transaction.
 */
export async function resumeReplayBatch(tx: Queryable, organizationId: string, id: string): Promise<BatchChange<{ released: number }>> {
  const r = await lockBatch(tx, organizationId, id, ['paused']);
  if (!r.ok) return r;
  await tx.query(`update replay_batches set status = 'running', paused_reason = null, running_since = now(), updated_at = now() where id = $1::uuid`, [
    r.batch.id,
  ]);
  await tx.query(`update replay_batch_progress set failed_streak = 0 where replay_batch_id = $1::uuid`, [r.batch.id]);
  return { ok: true, batch: r.batch, released: await releaseBatch(tx, r.batch.id) };
}

/**
 * Cancels a running or paused batch: its waiting deliveries end failed
 * (their ids are returned); one in flight finishes its attempt and ends
 * failed if it would need another. Call in a transaction.
 */
export async function cancelReplayBatch(tx: Queryable, organizationId: string, id: string): Promise<BatchChange<{ cancelled: string[] }>> {
  const r = await lockBatch(tx, organizationId, id, ['running', 'paused']);
  if (!r.ok) return r;
  const cancelled = await cancelBatch(tx, r.batch.id);
  await tx.query(`update replay_batches set status = 'cancelled', finished_at = now(), updated_at = now() where id = $1::uuid`, [r.batch.id]);
  return { ok: true, batch: r.batch, cancelled };
}

async function setStatus(tx: Queryable, id: string, status: 'paused' | 'finished', reason: string | null, onlyIfRunning = false): Promise<boolean> {
  const { rowCount } = await tx.query(
    `update replay_batches
        set status = $2, paused_reason = $3, finished_at = case when $2 = 'finished' then now() end, updated_at = now()
      where id = $1::uuid${onlyIfRunning ? ` and status = 'running'` : ''}`,
    [id, status, reason],
  );
  return rowCount > 0;
}

/**
 * Deletes the pacing rows of batches with nothing left to pace: no
 * delivery of theirs pending (held ones included) or in flight (a retry
 * of which would be paced), as their progress counts say. Nothing makes
 * such a batch's deliveries wait again, so the row is never needed again;
 * and while no pacing row exists, claims leave batch pacing out of their
 * statement (claim.ts). A batch's rows and deliveries are inserted in one
 * transaction, so a new batch is never seen with a row and nothing
 * waiting. Safe on every node at once.
 */
export async function endIdleBatchPacing(db: Queryable): Promise<number> {
  const { rowCount } = await db.query(
    `delete from replay_batch_pacing rp
      where exists (select 1 from replay_batch_progress p where p.replay_batch_id = rp.replay_batch_id and ${WAITING_NOW} = 0)`,
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
 * through the delivery_retry_* SQL functions (migration 0021, which must
 * hold the same two values: test/delivery/complete-statements.test.ts
 * checks): a held delivery stays held, a cancelled one ends failed.
 * So pause and cancel hold for what was in flight at the time too, in
 * whichever order the mark and the attempt's outcome commit (both update
 * the delivery's row, so one waits for the other and sees its result).
 */
export const CANCELLED_MARK = '9999-12-31T00:00:00Z';

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

/**
 * A batch's waiting count as of the reading statement's snapshot: the
 * folded count plus its rows not folded yet (few: a tick's worth). Both
 * are read in one snapshot, and a fold moves rows from one to the other in
 * one statement, so the sum is exact whenever it is read. `p` is the
 * batch's replay_batch_progress row.
 */
const unfolded = (col: 'waiting' | 'succeeded' | 'failed') =>
  `(p.${col} + coalesce((select sum(c.${col}) from replay_batch_changes c where c.replay_batch_id = p.replay_batch_id), 0))::int`;
const WAITING_NOW = unfolded('waiting');

export interface BatchCounts {
  /** pending or in flight */
  waiting: number;
  succeeded: number;
  /** failed or dead */
  failed: number;
}

/** Where each batch's deliveries stand, exactly, read from its progress row (never from its deliveries). */
export async function batchCounts(db: Queryable, batchIds: readonly string[]): Promise<Map<string, BatchCounts>> {
  const { rows } = await db.query<{ batch: string } & BatchCounts>(
    `select p.replay_batch_id as batch, ${WAITING_NOW} as waiting, ${unfolded('succeeded')} as succeeded, ${unfolded('failed')} as failed
       from replay_batch_progress p where p.replay_batch_id = any($1::uuid[])`,
    [batchIds],
  );
  const out = new Map<string, BatchCounts>();
  for (const id of batchIds) out.set(id, { waiting: 0, succeeded: 0, failed: 0 });
  for (const r of rows) out.set(r.batch, { waiting: r.waiting, succeeded: r.succeeded, failed: r.failed });
  return out;
}

/**
 * Folds the changes recorded since the last fold into each batch's
 * progress row, in one statement: the rows it deletes are the rows it
 * adds, so a change is counted once, whichever node folds, and one still
 * uncommitted when this runs is folded by a later tick. It cannot miss a
 * change: every change of a counted delivery's status or attempt count
 * appends its row from a trigger in the changing transaction (migration
 * 0020), so a change is either committed with its row, or not made.
 * Costs the number of changes, never the size of a batch.
 *
 * The run of failures (failed_streak) counts attempts started since the
 * batch last started running, in the order they started: a success among
 * the folded attempts starts it again from the failures after it.
 */
export async function foldProgress(db: Queryable): Promise<number> {
  const { rowCount } = await db.query(
    `with gone as (
       delete from replay_batch_changes returning replay_batch_id, waiting, succeeded, failed, attempt_at, attempt_ok
     ),
     sums as (
       select replay_batch_id, sum(waiting)::int as w, sum(succeeded)::int as s, sum(failed)::int as f from gone group by replay_batch_id
     ),
     attempts as (
       select g.replay_batch_id, g.attempt_at, g.attempt_ok
         from gone g join replay_batches b on b.id = g.replay_batch_id
        where g.attempt_at is not null and g.attempt_at >= coalesce(b.running_since, '-infinity')
     ),
     last_ok as (
       select replay_batch_id, max(attempt_at) filter (where attempt_ok) as at from attempts group by replay_batch_id
     ),
     streaks as (
       select a.replay_batch_id, l.at is not null as restarted,
              count(*) filter (where not a.attempt_ok and a.attempt_at > coalesce(l.at, '-infinity'))::int as fails
         from attempts a join last_ok l on l.replay_batch_id = a.replay_batch_id
        group by a.replay_batch_id, l.at
     )
     update replay_batch_progress p
        set waiting = p.waiting + s.w, succeeded = p.succeeded + s.s, failed = p.failed + s.f,
            failed_streak = case when st.restarted then st.fails else p.failed_streak + coalesce(st.fails, 0) end
       from sums s left join streaks st on st.replay_batch_id = s.replay_batch_id
      where p.replay_batch_id = s.replay_batch_id`,
  );
  return rowCount;
}

/** A batch with its progress: what was delivered, what failed, what is left, and when it should end at its rate. */
export async function getReplayBatch(db: Queryable, organizationId: string, id: string) {
  const b = await findReplayBatch(db, organizationId, id);
  if (!b) return undefined;
  const c = (await batchCounts(db, [b.id])).get(b.id)!;
  const remaining = b.status === 'cancelled' ? 0 : c.waiting;
  return {
    id: b.id,
    incident_id: b.incident_id,
    status: b.status,
    requests_per_minute: b.requests_per_minute,
    queued_count: b.queued_count,
    delivered_count: c.succeeded,
    failed_count: c.failed,
    remaining_count: remaining,
    paused_reason: b.paused_reason,
    created_at: new Date(b.created_at).toISOString(),
    finished_at: b.finished_at ? new Date(b.finished_at).toISOString() : null,
    estimated_end_at: b.status === 'running' ? new Date(Date.now() + (remaining * 60_000) / b.requests_per_minute).toISOString() : null,
  };
}

/** What the batch's owner (an incident) writes when the supervisor finishes or pauses a batch, in the transaction that does it. */
export interface BatchNarration {
  finished(tx: Queryable, batch: BatchRow, counts: BatchCounts): Promise<void>;
  paused(tx: Queryable, batch: BatchRow, reason: string, counts: BatchCounts): Promise<void>;
}

/**
 * One supervisor tick: folds what changed since the last (foldProgress),
 * then reads each running batch's progress row: one with nothing left
 * waiting is finished; one whose last PAUSE_AFTER_FAILURES attempts since
 * it last started running all failed is paused (its deliveries held, as a
 * member's pause does). Then the pacing rows of batches with nothing left
 * waiting are dropped, so claims go back to their cheaper statement. Costs
 * the changes plus one row per running batch, never a batch's deliveries
 * (bench/replay-supervisor.ts). Safe on every node at once: each change of
 * state is conditional on the batch still running.
 */
export async function superviseReplayBatches(db: Db, narrate: BatchNarration): Promise<{ finished: string[]; paused: string[] }> {
  const out = { finished: [] as string[], paused: [] as string[] };
  await foldProgress(db);
  const { rows } = await db.query<BatchRow & BatchCounts & { failed_streak: number }>(
    `select ${BATCH_COLUMNS}, ${WAITING_NOW} as waiting, ${unfolded('succeeded')} as succeeded, ${unfolded('failed')} as failed, p.failed_streak
       from replay_batches b join replay_batch_progress p on p.replay_batch_id = b.id
      where b.status = 'running'`,
  );
  for (const b of rows) {
    const counts = { waiting: b.waiting, succeeded: b.succeeded, failed: b.failed };
    if (counts.waiting === 0) {
      const done = await db.transaction(async (tx) => {
        if (!(await setStatus(tx, b.id, 'finished', null, true))) return false;
        await narrate.finished(tx, b, counts);
        return true;
      });
      if (done) out.finished.push(b.id);
    } else if (b.failed_streak >= PAUSE_AFTER_FAILURES) {
      const reason = `the last ${PAUSE_AFTER_FAILURES} replayed requests failed: the destination is failing again`;
      const paused = await db.transaction(async (tx) => {
        if (!(await setStatus(tx, b.id, 'paused', reason, true))) return false;
        await holdBatch(tx, b.id);
        await narrate.paused(tx, b, reason, counts);
        return true;
      });
      if (paused) out.paused.push(b.id);
    }
  }
  await endIdleBatchPacing(db);
  return out;
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
