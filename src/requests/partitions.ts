import type { Db, Queryable } from '../db/db.ts';
import { idFloor } from './capture-ids.ts';

/**
 * captured_requests is partitioned by day of received_at (UTC), one table per
 * day named captured_requests_pYYYYMMDD, plus captured_requests_default for
 * anything outside the created days (so an insert never fails for want of a
 * partition). Retention then drops whole days: no row-by-row delete, no
 * bloat, no vacuum debt, however many rows a day holds.
 */
export const DAY_MS = 86_400_000;
const PREFIX = 'captured_requests_p';
/** Maintenance takes this transaction-level advisory lock: one node at a time does partition DDL. */
export const PARTITION_LOCK_KEY = 7_420_913_101;
// Partition DDL takes an ACCESS EXCLUSIVE lock on captured_requests for a
// moment, and while it waits for one every insert queues behind it. Giving
// up after 2 s (and trying again at the next run) bounds that stall.
const DDL_LOCK_TIMEOUT = '2s';

/**
 * Columns no planner estimate uses, and the costliest to sample: a partition
 * analyzes in a third of the time without them. A new partition does not
 * take the parent's statistics targets (migration 0008 set them on those
 * that existed), so each gets them at creation.
 */
const NO_STATISTICS = ['headers', 'body'];

export const dayStart = (ms: number) => Math.floor(ms / DAY_MS) * DAY_MS;

export function partitionName(day: number): string {
  return PREFIX + new Date(day).toISOString().slice(0, 10).replace(/-/g, '');
}

/** The day a partition holds, from its name; undefined for the default partition or anything else. */
export function partitionDay(name: string): number | undefined {
  const m = /^captured_requests_p(\d{4})(\d{2})(\d{2})$/.exec(name);
  return m ? Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])) : undefined;
}

export async function listPartitions(db: Db): Promise<{ name: string; day: number }[]> {
  const { rows } = await db.query<{ name: string }>(
    `select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid
      where i.inhparent = 'captured_requests'::regclass order by 1`,
  );
  return rows.flatMap((r) => {
    const day = partitionDay(r.name);
    return day === undefined ? [] : [{ name: r.name, day }];
  });
}

export interface PartitionReport {
  created: string[];
  dropped: string[];
  /** Days not created because rows for them already sit in the default partition, or DDL that failed; retried next run. */
  skipped: { name: string; why: string }[];
}

/**
 * Creates today's partition and the next `daysAhead` days', and drops every
 * partition whose whole day is older than `keepDays` (the longest retention of
 * any plan). Safe on several nodes: each DDL transaction first takes a
 * try-lock, and a node that does not get it leaves the work to the one that did.
 */
export async function maintainPartitions(db: Db, now: number, keepDays: number, daysAhead = 7): Promise<PartitionReport> {
  const report: PartitionReport = { created: [], dropped: [], skipped: [] };
  const existing = new Set((await listPartitions(db)).map((p) => p.name));
  for (let d = 0; d <= daysAhead; d++) {
    const day = dayStart(now) + d * DAY_MS;
    const name = partitionName(day);
    if (existing.has(name)) continue;
    const outcome = await ddl(db, async (tx) => {
      // Rows for this day in the default partition (written while the day had
      // no partition) would make CREATE fail. Moving them would delete and
      // re-insert captures under running deliveries, so the day stays in the
      // default partition instead; it is small and still queried normally.
      const from = new Date(day).toISOString();
      const to = new Date(day + DAY_MS).toISOString();
      const { rows } = await tx.query(
        `select 1 from captured_requests_default
          where id >= $1::uuid and id < $2::uuid and received_at >= $3::timestamptz and received_at < $4::timestamptz limit 1`,
        [idFloor(day), idFloor(day + DAY_MS), from, to],
      );
      if (rows.length > 0) return 'rows for this day are in the default partition';
      await tx.exec(`create table if not exists ${name} partition of captured_requests for values from ('${from}') to ('${to}')`);
      // Statistics of an empty table (0 rows, 0 pages) make the planner size
      // it by its real pages from the start, instead of assuming 10 pages
      // until the first analyze (src/db/table-maintenance.ts does that one).
      await tx.exec(`alter table ${name} ${NO_STATISTICS.map((c) => `alter column ${c} set statistics 0`).join(', ')}`);
      await tx.exec(`analyze ${name}`);
      return undefined;
    });
    if (outcome === undefined) report.created.push(name);
    else report.skipped.push({ name, why: outcome });
  }
  const cutoff = now - keepDays * DAY_MS;
  for (const p of await listPartitions(db)) {
    if (p.day + DAY_MS > cutoff) continue;
    // DETACH first: it refuses while another table's foreign key still
    // references rows of the partition, where a plain DROP would not ask.
    const outcome = await ddl(db, async (tx) => {
      await tx.exec(`alter table captured_requests detach partition ${p.name}`);
      await tx.exec(`drop table ${p.name}`);
      return undefined;
    });
    if (outcome === undefined) report.dropped.push(p.name);
    else report.skipped.push({ name: p.name, why: outcome });
  }
  return report;
}

/** One DDL step in its own transaction under the maintenance try-lock; returns why it did not happen, or undefined. */
async function ddl(db: Db, step: (tx: Queryable) => Promise<string | undefined>): Promise<string | undefined> {
  try {
    return await db.transaction(async (tx) => {
      const { rows } = await tx.query<{ ok: boolean }>('select pg_try_advisory_xact_lock($1) as ok', [PARTITION_LOCK_KEY]);
      if (!rows[0].ok) return 'another node is maintaining partitions';
      await tx.exec(`set local lock_timeout = '${DDL_LOCK_TIMEOUT}'`);
      return step(tx);
    });
  } catch (err) {
    return (err as Error).message;
  }
}
