import type { Logger } from 'pino';
import { createLoop, type LoopMetrics } from '../background/scheduler.ts';
import type { Db, Queryable } from './db.ts';

/**
 * Statistics and vacuum for every table of the schema, on both databases.
 *
 * PGlite runs PostgreSQL as a single-user backend without background
 * workers: no autovacuum and no auto-analyze, ever. Tables that take updates
 * and deletes (deliveries, delivery attempts, ...) keep every dead row, and no
 * table ever gets statistics. On PostgreSQL autovacuum may be off, and even
 * when on it reaches a fresh capture partition late (it looks once a minute
 * and then needs 50 + 10% of a size it does not know yet): a day partition
 * filled at capture rates is read with no statistics for its first minutes,
 * and the planner guesses a handful of rows where there are 200,000.
 *
 * So a pass reads the counters behind pg_stat_user_tables (PGlite keeps
 * them too) and does what autovacuum would, with its own thresholds:
 * - analyze a table never analyzed once it has `firstAnalyzeRows` changes;
 * - analyze a capture partition (insert-only, growing) again when it has
 *   doubled, and any other table after 50 + 10% changes (autovacuum's rule);
 * - vacuum a table after 50 + 20% dead rows (autovacuum's rule), or when its
 *   oldest unfrozen transaction id is `freezeAge` old (wraparound);
 * - a table's own autovacuum_{analyze,vacuum}_{threshold,scale_factor}
 *   storage options replace those numbers, as they do for autovacuum.
 * Tables come from the catalog (every user table), not a list: new tables are covered
 * as their migrations add them.
 *
 * With autovacuum on (PostgreSQL's default) only partitions are analyzed
 * here, which is what autovacuum does not do in time; vacuum and the other
 * tables are left to it. A table with `autovacuum_enabled = false` counts as
 * not covered.
 */
export interface TableMaintenanceOptions {
  /** Changes after which a table that was never analyzed is. */
  firstAnalyzeRows?: number;
  /**
   * Whether the server's autovacuum looks after the tables; undefined asks the
   * server (autovacuum and track_counts both on). PGlite never has it.
   */
  autovacuum?: boolean;
  /** Transaction id age at which a table is vacuumed to freeze its rows. */
  freezeAge?: number;
  /**
   * default_statistics_target of Weir's analyzes; undefined keeps the
   * server's (100). startTableMaintenance uses 10 on PGlite (see there).
   */
  statisticsTarget?: number;
}

export const FIRST_ANALYZE_ROWS = 2_000;
// autovacuum's defaults (autovacuum_*_threshold and *_scale_factor)
const ANALYZE_BASE = 50;
const ANALYZE_SCALE = 0.1;
const VACUUM_BASE = 50;
const VACUUM_SCALE = 0.2;
// vacuum_freeze_table_age: from here a vacuum scans the whole table and freezes
const FREEZE_AGE = 150_000_000;

export interface TableStats {
  /** Schema-qualified, quoted: ready for the statement. */
  ident: string;
  name: string;
  partition: boolean;
  /** reltuples: -1 until the first vacuum or analyze. */
  tuples: number;
  modified: number;
  dead: number;
  analyzed: boolean;
  xidAge: number;
  /** autovacuum covers this table (server setting and the table's own option). */
  autovacuum: boolean;
  /**
   * The table's own autovacuum_* thresholds (ALTER TABLE ... SET), which
   * Weir follows as autovacuum would: the knob operators already know.
   */
  own: { analyzeBase?: number; analyzeScale?: number; vacuumBase?: number; vacuumScale?: number };
}

export interface MaintenanceStep {
  table: string;
  action: 'analyze' | 'vacuum' | 'vacuum analyze';
  why: string;
  /** How long the statement took, including any wait for its turn on PGlite's one connection. */
  ms: number;
}

// The counters through their functions on pg_class rather than the
// pg_stat_user_tables view, which computes twenty of them a table: a pass
// runs every second, and on PGlite every other query waits for it. Every
// number as float8: bigint columns would come back as strings.
const STATS_SQL = `
  select format('%I.%I', n.nspname, c.relname) as ident, c.relname as name, c.relispartition as partition,
         c.reltuples::float8 as tuples,
         pg_stat_get_mod_since_analyze(c.oid)::float8 as modified,
         pg_stat_get_dead_tuples(c.oid)::float8 as dead,
         (pg_stat_get_last_analyze_time(c.oid) is not null or pg_stat_get_last_autoanalyze_time(c.oid) is not null) as analyzed,
         age(c.relfrozenxid)::float8 as xid_age,
         (select split_part(o, '=', 2)::float8 from unnest(c.reloptions) o where o like 'autovacuum_analyze_threshold=%') as analyze_base,
         (select split_part(o, '=', 2)::float8 from unnest(c.reloptions) o where o like 'autovacuum_analyze_scale_factor=%') as analyze_scale,
         (select split_part(o, '=', 2)::float8 from unnest(c.reloptions) o where o like 'autovacuum_vacuum_threshold=%') as vacuum_base,
         (select split_part(o, '=', 2)::float8 from unnest(c.reloptions) o where o like 'autovacuum_vacuum_scale_factor=%') as vacuum_scale,
         coalesce($1::boolean, current_setting('autovacuum')::boolean and current_setting('track_counts')::boolean)
           and not exists (select 1 from unnest(c.reloptions) o where o ~* '^autovacuum_enabled=(false|off|no|0)$') as autovacuum
    from pg_class c join pg_namespace n on n.oid = c.relnamespace
   where c.relkind = 'r' and n.nspname not in ('pg_catalog', 'information_schema') and n.nspname !~ '^pg_toast'
   order by c.relname`;

export async function readTableStats(conn: Queryable, autovacuum?: boolean): Promise<TableStats[]> {
  // Counters reach the shared statistics when a backend goes idle, at most
  // once a second; this backend's own go now, so a pass sees its own writes.
  await conn.query('select pg_stat_force_next_flush()');
  // named: parsed and planned once per connection, not every second
  type Row = Omit<TableStats, 'xidAge' | 'own'> & { xid_age: number; analyze_base: number | null; analyze_scale: number | null; vacuum_base: number | null; vacuum_scale: number | null };
  const { rows } = await conn.query<Row>(STATS_SQL, [autovacuum ?? null], { name: 'weir_table_stats' });
  return rows.map(({ xid_age, analyze_base, analyze_scale, vacuum_base, vacuum_scale, ...r }) => ({
    ...r,
    xidAge: xid_age,
    own: { analyzeBase: analyze_base ?? undefined, analyzeScale: analyze_scale ?? undefined, vacuumBase: vacuum_base ?? undefined, vacuumScale: vacuum_scale ?? undefined },
  }));
}

/** What a table needs now, and why; undefined when nothing. */
export function dueWork(t: TableStats, o: TableMaintenanceOptions = {}): Omit<MaintenanceStep, 'ms' | 'table'> | undefined {
  const first = o.firstAnalyzeRows ?? FIRST_ANALYZE_ROWS;
  const size = Math.max(t.tuples, 0);
  let analyze: string | undefined;
  if (!t.analyzed || t.tuples < 0) {
    if (t.modified >= first) analyze = `never analyzed, ${t.modified} rows changed`;
  } else if (t.partition && t.own.analyzeScale === undefined) {
    // A capture partition only grows: statistics from half its size still
    // describe it, and analyzing at each doubling costs a day partition of
    // millions about ten analyzes instead of seventy.
    if (t.modified >= Math.max(size, first)) analyze = `grown by ${t.modified} rows since analyzed at ${size}`;
  } else if (t.modified >= (t.own.analyzeBase ?? ANALYZE_BASE) + (t.own.analyzeScale ?? ANALYZE_SCALE) * size) {
    analyze = `${t.modified} rows changed of ${size}`;
  }
  // Autovacuum analyzes partitions too, but late (see above): they stay ours.
  if (t.autovacuum && !t.partition) return undefined;
  let vacuum: string | undefined;
  if (!t.autovacuum) {
    if (t.dead >= (t.own.vacuumBase ?? VACUUM_BASE) + (t.own.vacuumScale ?? VACUUM_SCALE) * size) vacuum = `${t.dead} dead rows of ${size}`;
    else if (t.xidAge >= (o.freezeAge ?? FREEZE_AGE)) vacuum = `transaction id age ${t.xidAge}`;
  }
  if (vacuum) return { action: analyze ? 'vacuum analyze' : 'vacuum', why: analyze ? `${vacuum}; ${analyze}` : vacuum };
  if (analyze) return { action: 'analyze', why: analyze };
  return undefined;
}

/**
 * One pass: reads the statistics, then analyzes and vacuums what is due, one
 * table at a time. VACUUM and ANALYZE take only SHARE UPDATE EXCLUSIVE locks,
 * which inserts and updates do not wait for; TRUNCATE false keeps VACUUM from
 * taking the ACCESS EXCLUSIVE lock it needs to give the empty end of a table
 * back to the file system (the space is reused from the free space map
 * instead). On PGlite queries run one after another, so each statement is a
 * stall of its length: measured and returned.
 */
export async function maintainTables(conn: Queryable, o: TableMaintenanceOptions = {}, stopping = () => false): Promise<MaintenanceStep[]> {
  const steps: MaintenanceStep[] = [];
  // A session setting (VACUUM refuses a transaction block, so no SET LOCAL):
  // on PGlite other queries run on this same backend between our
  // statements, and it changes nothing for them, only ANALYZE reads it.
  if (o.statisticsTarget !== undefined) await conn.exec(`set default_statistics_target = ${Math.trunc(o.statisticsTarget)}`);
  try {
    await maintainEach(conn, o, stopping, steps);
  } finally {
    if (o.statisticsTarget !== undefined) await conn.exec('reset default_statistics_target');
  }
  return steps;
}

async function maintainEach(conn: Queryable, o: TableMaintenanceOptions, stopping: () => boolean, steps: MaintenanceStep[]): Promise<void> {
  for (const t of await readTableStats(conn, o.autovacuum)) {
    if (stopping()) break;
    const work = dueWork(t, o);
    if (!work) continue;
    // No column lists: ANALYZE of some columns leaves n_mod_since_analyze
    // as it was, so the table would stay due. Columns not worth statistics
    // carry a statistics target of 0 instead (migration 0008).
    const sql = work.action === 'analyze' ? `analyze ${t.ident}` : `vacuum (analyze ${work.action === 'vacuum analyze'}, truncate false) ${t.ident}`;
    const started = performance.now();
    await conn.exec(sql);
    steps.push({ table: t.name, ...work, ms: Math.round((performance.now() - started) * 10) / 10 });
  }
}

/** Whether the server runs autovacuum over Weir's tables (PGlite: never). */
export async function serverAutovacuum(db: Db): Promise<boolean> {
  if (db.kind === 'pglite') return false;
  const { rows } = await db.query<{ on: boolean }>(
    `select current_setting('autovacuum')::boolean and current_setting('track_counts')::boolean as on`,
  );
  return rows[0].on;
}

/** Any constant works; every Weir node must use the same one. */
export const TABLE_MAINTENANCE_LOCK_KEY = 7_420_913_103;
const CHECK_EVERY_MS = 1_000;

export interface TableMaintenance {
  /** One pass now (after a pass in progress); resolves with what it did, or undefined when another node holds the lock. */
  runOnce(): Promise<MaintenanceStep[] | undefined>;
  stop(): Promise<void>;
}

/**
 * Runs maintainTables every `checkEveryMs` (the statistics read is cheap; a
 * partition filling at 20,000 captures a second needs its first analyze
 * within seconds, not minutes). On PostgreSQL one node at a time does it,
 * under a session-level advisory try-lock: the others skip the pass.
 */
export async function startTableMaintenance(
  db: Db,
  logger: Pick<Logger, 'info' | 'warn' | 'error'>,
  opts: TableMaintenanceOptions & { checkEveryMs?: number; loopMetrics?: LoopMetrics } = {},
): Promise<TableMaintenance> {
  const autovacuum = db.kind === 'pglite' ? false : opts.autovacuum;
  // On PGlite an analyze holds up every other query for its length, and
  // most of that length is sorting the sample (300 rows per statistics
  // target unit): a 100,000-capture partition took 219 ms at the default
  // target of 100 and 11 ms at 10. Ten histogram buckets and ten common
  // values are enough for the estimates Weir's statements need; the hot
  // ones do not depend on statistics at all (test/db/query-plans.test.ts).
  const statisticsTarget = opts.statisticsTarget ?? (db.kind === 'pglite' ? 10 : undefined);
  if (db.kind === 'postgres' && autovacuum === undefined && !(await serverAutovacuum(db))) {
    logger.warn('autovacuum is off on this PostgreSQL server: Weir analyzes and vacuums its own tables');
  }
  const loop = createLoop({
    name: 'table_maintenance',
    everyMs: opts.checkEveryMs ?? CHECK_EVERY_MS,
    metrics: opts.loopMetrics,
    onError: (err) => logger.error({ err }, 'table maintenance failed; retrying at the next check'),
    pass: (signal) =>
      db.session(async (conn) => {
        if (db.kind === 'postgres') {
          const { rows } = await conn.query<{ ok: boolean }>('select pg_try_advisory_lock($1) as ok', [TABLE_MAINTENANCE_LOCK_KEY]);
          if (!rows[0].ok) return undefined;
        }
        try {
          const steps = await maintainTables(conn, { ...opts, autovacuum, statisticsTarget }, () => signal.aborted);
          for (const s of steps) logger.info({ table: s.table, action: s.action, why: s.why, ms: s.ms }, 'table maintained');
          return steps;
        } finally {
          if (db.kind === 'postgres') await conn.query('select pg_advisory_unlock($1)', [TABLE_MAINTENANCE_LOCK_KEY]);
        }
      }),
  });
  loop.start();
  return { runOnce: () => loop.runOnce(), stop: () => loop.stop() };
}
