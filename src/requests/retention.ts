import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import { createLoop, type LoopMetrics } from '../background/scheduler.ts';
import type { Db } from '../db/db.ts';
import { PLAN_NAMES, type PlanTable } from '../orgs/plans.ts';
import { idFloor } from './capture-ids.ts';
import { DAY_MS, maintainPartitions } from './partitions.ts';

/** The sweeper's transaction-level try-lock: one delete batch at a time across all nodes. */
export const SWEEP_LOCK_KEY = 7_420_913_102;
const BATCH = 2_000;
const ENDPOINT_CHUNK = 500;
// A regular sweep only looks at captures that expired since about the last
// sweeps (a couple of day partitions); a full sweep, at start and daily,
// catches everything else (an organization moved to a shorter plan).
const LOOKBACK_MS = 2 * DAY_MS;
const RUN_EVERY_MS = 10 * 60_000;
const FULL_SWEEP_EVERY_MS = DAY_MS;

export function longestRetentionDays(plans: PlanTable): number {
  return Math.max(...PLAN_NAMES.map((p) => plans[p].retention_days));
}

export interface SweepOptions {
  full: boolean;
  batchSize?: number;
  /** Checked between batches, so shutdown does not wait for a long sweep. */
  stopping?: () => boolean;
}

/**
 * Deletes captures older than their organization's plan retention, in small
 * batches (each its own short transaction), so the sweeper never holds long
 * locks or a long transaction. Returns how many rows it deleted, or stops
 * early when another node holds the sweep lock.
 *
 * Two passes: (1) anything older than the longest retention that partition
 * drops did not remove (the default partition); (2) per plan with a shorter
 * retention, that plan's endpoints' captures between the lookback bound and
 * the cutoff, found through the (endpoint_id, id) index: ids are time-ordered,
 * so "received before the cutoff" is "id below idFloor(cutoff)".
 */
export async function sweepExpiredCaptures(db: Db, plans: PlanTable, now: number, opts: SweepOptions): Promise<number> {
  const batch = opts.batchSize ?? BATCH;
  const longest = longestRetentionDays(plans);
  let deleted = 0;
  const run = async (where: string, params: unknown[]): Promise<boolean> => {
    for (;;) {
      if (opts.stopping?.()) return false;
      const n = await db.transaction(async (tx) => {
        const { rows } = await tx.query<{ ok: boolean }>('select pg_try_advisory_xact_lock($1) as ok', [SWEEP_LOCK_KEY]);
        if (!rows[0].ok) return -1;
        const res = await tx.query(
          `delete from captured_requests where ${where}
              and (id, received_at) in (select id, received_at from captured_requests where ${where} limit ${batch})`,
          params,
        );
        return res.rowCount;
      });
      if (n < 0) return false;
      deleted += n;
      if (n < batch) return true;
    }
  };

  const globalCutoff = now - longest * DAY_MS;
  if (!(await run('received_at < $1::timestamptz', [new Date(globalCutoff).toISOString()]))) return deleted;

  for (const plan of PLAN_NAMES) {
    const days = plans[plan].retention_days;
    if (days >= longest) continue;
    const cutoff = now - days * DAY_MS;
    const low = opts.full ? undefined : Math.max(globalCutoff, cutoff - LOOKBACK_MS);
    let after: string | null = null;
    for (;;) {
      const { rows }: { rows: { id: string }[] } = await db.query<{ id: string }>(
        `select e.id from endpoints e join organizations o on o.id = e.organization_id
          where o.plan = $1 and ($2::uuid is null or e.id > $2::uuid) order by e.id limit $3`,
        [plan, after, ENDPOINT_CHUNK],
      );
      if (rows.length === 0) break;
      after = rows[rows.length - 1].id;
      const ids = rows.map((r) => r.id);
      const bounds = low === undefined ? '' : ' and id >= $4::uuid and received_at >= $5::timestamptz';
      const params: unknown[] = [ids, idFloor(cutoff), new Date(cutoff).toISOString()];
      if (low !== undefined) params.push(idFloor(low), new Date(low).toISOString());
      const ok = await run(`endpoint_id = any($1::uuid[]) and id < $2::uuid and received_at < $3::timestamptz${bounds}`, params);
      if (!ok) return deleted;
      if (rows.length < ENDPOINT_CHUNK) break;
    }
  }
  return deleted;
}

export interface CaptureMaintenance {
  /** One full pass now (partitions, then a sweep); resolves when done. */
  runOnce(full?: boolean): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Background upkeep of captured_requests on every node: partitions for the
 * coming days, dropping days past the longest retention, and the retention
 * sweep. Several nodes may run it at once: the advisory try-locks make all
 * but one skip each step. Partitions are made once, awaited, before the
 * ingest listener opens; the sweep runs in the background, first 5 s after
 * start (a full sweep), then every ten minutes (full once a day).
 */
export async function startCaptureMaintenance(deps: { db: Db; config: Config; logger: Logger; loopMetrics?: LoopMetrics }): Promise<CaptureMaintenance> {
  const { db, config, logger } = deps;
  let lastFull = 0;
  /** A full sweep asked for by runOnce(true); the timer's passes decide by lastFull. */
  let forceFull = false;

  const partitions = async () => {
    const report = await maintainPartitions(db, Date.now(), longestRetentionDays(config.plans));
    if (report.created.length || report.dropped.length) logger.info({ created: report.created, dropped: report.dropped }, 'capture partitions maintained');
    for (const s of report.skipped) logger.warn({ partition: s.name, why: s.why }, 'capture partition step skipped');
  };
  const loop = createLoop({
    name: 'capture_retention',
    everyMs: RUN_EVERY_MS,
    firstAfterMs: 5_000,
    metrics: deps.loopMetrics,
    onError: (err) => logger.error({ err }, 'capture maintenance failed; retrying at the next run'),
    async pass(signal) {
      const now = Date.now();
      const full = forceFull || now - lastFull >= FULL_SWEEP_EVERY_MS;
      forceFull = false;
      await partitions();
      const deleted = await sweepExpiredCaptures(db, config.plans, now, { full, stopping: () => signal.aborted });
      if (full) lastFull = now;
      if (deleted > 0) logger.info({ deleted, full }, 'expired captures deleted');
    },
  });

  await partitions().catch((err) => logger.error({ err }, 'creating capture partitions failed; captures go to the default partition'));
  loop.start();
  return {
    async runOnce(full = true) {
      forceFull ||= full;
      await loop.runOnce();
    },
    stop: () => loop.stop(),
  };
}
