import type { Db, Queryable } from '../db/db.ts';
import { idTime } from '../requests/capture-ids.ts';

/** Only one node rolls up at a time; the others skip. */
const ROLLUP_LOCK_KEY = 7_420_913_209;
/**
 * A day is rolled up this long after it ends: a capture commits a moment
 * after the millisecond its id (and received_at) carries, and an hour is far
 * beyond the ingest listener's own request timeout.
 */
export const ROLLUP_DELAY_MS = 60 * 60_000;
/** Days rolled up per call: a first run over a long history continues on the next call. */
const DAYS_PER_CALL = 31;
const DAY_MS = 86_400_000;

export const dayString = (ms: number) => new Date(ms).toISOString().slice(0, 10);

/**
 * The last rolled-up day (YYYY-MM-DD) or null: days after it are counted
 * live from the tables.
 */
export async function lastRolledDay(db: Queryable): Promise<string | null> {
  const { rows } = await db.query<{ day: string | null }>(`select max(day)::text as day from usage_rollups`);
  return rows[0].day;
}

/**
 * Rolls up every closed day not rolled up yet (at most DAYS_PER_CALL), in
 * order, one transaction per day: captures and bytes from that day's
 * partition, attempts from delivery_attempts, replays from deliveries.
 * Returns the days rolled up, or null when another node holds the lock.
 */
export async function rollupUsage(db: Db, now = Date.now()): Promise<string[] | null> {
  const rolled: string[] = [];
  for (let i = 0; i < DAYS_PER_CALL; i++) {
    const day = await db.transaction(async (tx) => {
      const { rows: lock } = await tx.query<{ ok: boolean }>('select pg_try_advisory_xact_lock($1) as ok', [ROLLUP_LOCK_KEY]);
      if (!lock[0].ok) return null;
      const next = await nextDay(tx);
      if (Date.parse(`${next}T00:00:00Z`) + DAY_MS + ROLLUP_DELAY_MS > now) return undefined;
      await tx.query(
        `insert into usage_daily (organization_id, day, captures, bytes_captured, forwards_attempted, forwards_succeeded, forwards_failed, replayed)
         select org, $1::date, sum(c), sum(b), sum(a), sum(s), sum(f), sum(r) from (
           select organization_id as org, count(*) as c, coalesce(sum(body_size), 0) as b, 0 as a, 0 as s, 0 as f, 0 as r
             from captured_requests where received_at >= $2::timestamptz and received_at < $3::timestamptz group by organization_id
           union all
           select organization_id, 0, 0, count(*), count(*) filter (where error_class is null), count(*) filter (where error_class is not null), 0
             from delivery_attempts where started_at >= $2::timestamptz and started_at < $3::timestamptz group by organization_id
           union all
           select organization_id, 0, 0, 0, 0, 0, count(*)
             from deliveries where replay_batch_id is not null and created_at >= $2::timestamptz and created_at < $3::timestamptz group by organization_id
         ) x
         where exists (select 1 from organizations o where o.id = x.org)
         group by org
         on conflict (organization_id, day) do nothing`,
        // the day's bounds computed here: a date cast in SQL would take the session's time zone, not UTC
        [next, `${next}T00:00:00.000Z`, new Date(Date.parse(`${next}T00:00:00Z`) + DAY_MS).toISOString()],
      );
      await tx.query(`insert into usage_rollups (day) values ($1::date)`, [next]);
      return next;
    });
    if (day === null) return rolled.length > 0 ? rolled : null;
    if (day === undefined) break;
    rolled.push(day);
  }
  return rolled;
}

/**
 * The day to roll up next: the one after the last rolled up; on a first run
 * the day of the oldest capture (its id's time: the primary key's first
 * entry) or, with none, yesterday.
 */
async function nextDay(tx: Queryable): Promise<string> {
  const last = await lastRolledDay(tx);
  if (last) return dayString(Date.parse(`${last}T00:00:00Z`) + DAY_MS);
  const { rows } = await tx.query<{ first_capture: string | null; first_attempt: Date | null; yesterday: Date }>(
    // the primary key leads with the UUIDv7 id: its first entry is the oldest capture
    `select (select id from captured_requests order by id limit 1) as first_capture,
            (select min(started_at) from delivery_attempts) as first_attempt, now() - interval '1 day' as yesterday`,
  );
  const r = rows[0];
  const times = [new Date(r.yesterday).getTime()];
  if (r.first_capture) times.push(idTime(r.first_capture));
  if (r.first_attempt) times.push(new Date(r.first_attempt).getTime());
  return dayString(Math.min(...times));
}
