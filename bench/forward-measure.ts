/**
 * What bench/forward.ts measures besides rates: statements sent through
 * the Db interface (a counting wrapper: every query and exec is one round
 * trip, a transaction adds its BEGIN and COMMIT), and CPU time, of this
 * process and, on PostgreSQL, of the server processes serving this
 * benchmark's database (read from /proc, so only this run's backends count,
 * not other work on the machine).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { constants, PerformanceObserver, type PerformanceEntry } from 'node:perf_hooks';
import type { Db, Queryable } from '../src/db/db.ts';

export interface Counter {
  statements: number;
  /** When set, wall time and count per kind of statement (see kindOf). */
  byKind?: Map<string, { count: number; ms: number }>;
}

/** A short name for a statement, by what it does (the forward path's statements; others by their first words). */
function kindOf(text: string): string {
  if (text.includes('with next as materialized')) return 'claim';
  if (text.includes('insert into delivery_attempts')) return text.includes('incident_outcome') ? 'complete (with incidents)' : 'complete';
  if (text.includes('min(next_attempt_at)')) return 'next due';
  if (text.startsWith('set local')) return 'set local (planner)';
  if (text.includes('from replay_batch_pacing')) return 'paced batches?';
  if (text.includes("lease_until < now()")) return 'requeue expired';
  return text.replace(/\s+/g, ' ').trim().slice(0, 40);
}

function timed<T>(c: Counter, kind: string, run: () => Promise<T>): Promise<T> {
  c.statements++;
  if (!c.byKind) return run();
  const t0 = performance.now();
  return run().finally(() => {
    const k = c.byKind!.get(kind) ?? { count: 0, ms: 0 };
    k.count++;
    k.ms += performance.now() - t0;
    c.byKind!.set(kind, k);
  });
}

function countQueries(q: Queryable, c: Counter): Queryable {
  return {
    query: (text, params, opts) => timed(c, kindOf(text), () => q.query(text, params, opts)),
    exec: (sql) => timed(c, kindOf(sql), () => q.exec(sql)),
  };
}

/** The same database, counting each statement it is sent into `c`. */
export function counted(db: Db, c: Counter): Db {
  const q = countQueries(db, c);
  return {
    kind: db.kind,
    query: q.query,
    exec: q.exec,
    transaction: (fn, opts) => {
      // BEGIN, COMMIT; settings go with BEGIN on PostgreSQL, separately on PGlite
      c.statements += opts?.settings && db.kind === 'pglite' ? 3 : 2;
      return db.transaction((tx) => fn(countQueries(tx, c)), opts);
    },
    withSettings: (settings, fn) => {
      // PGlite: in a transaction setting them (BEGIN, the settings, COMMIT); PostgreSQL: nothing more
      if (db.kind === 'pglite') c.statements += 3;
      return db.withSettings(settings, (q) => fn(countQueries(q, c)));
    },
    session: (fn) => db.session((conn) => fn(countQueries(conn, c))),
    listen: (channel, onNotify, onReconnect) => db.listen(channel, onNotify, onReconnect),
    listening: () => db.listening(),
    poolStats: db.poolStats ? () => db.poolStats!() : undefined,
    close: () => db.close(),
  };
}

const TICK_MS = 10; // USER_HZ is 100 on Linux

/** CPU ms of the processes `pids` (utime + stime from /proc); a process gone meanwhile counts 0. */
export function procCpuMs(pids: number[]): number {
  let ms = 0;
  for (const pid of pids) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      ms += (Number(fields[11]) + Number(fields[12])) * TICK_MS;
    } catch {
      /* exited */
    }
  }
  return ms;
}

/** The database's name, read once per Db (the backends' process titles carry it). */
const databaseNames = new WeakMap<Db, string>();

/**
 * The PostgreSQL backends serving this database now (PGlite: none, it runs
 * in this process), found by their process titles ("postgres: user
 * database host(port) state"), not by a query: a query through the pool ran
 * on one of the backends being measured, and excluding its own backend (as
 * this once did) left out whichever measured statement that connection had
 * just run.
 */
async function serverPids(db: Db): Promise<number[]> {
  if (db.kind !== 'postgres') return [];
  let name = databaseNames.get(db);
  if (name === undefined) {
    const { rows } = await db.query<{ name: string }>('select current_database() as name');
    name = rows[0].name;
    databaseNames.set(db, name);
  }
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // "postgres: [cluster: ]user database host(port) state"
      const m = /^postgres: (?:\S+: )?\S+ (\S+) /.exec(readFileSync(`/proc/${entry}/cmdline`, 'utf8'));
      if (m?.[1] === name) pids.push(Number(entry));
    } catch {
      /* exited */
    }
  }
  return pids;
}

export interface CpuSample {
  processMs: number;
  serverMs: number;
  pids: number[];
}

export async function cpuNow(db: Db): Promise<CpuSample> {
  // the backends first, so the search for them is not counted as this process's work
  const pids = await serverPids(db);
  const serverMs = procCpuMs(pids);
  const u = process.cpuUsage();
  return { processMs: (u.user + u.system) / 1000, serverMs, pids };
}

/** CPU spent since `start`: this process, and the same server backends (plus any that started since). */
export async function cpuSince(db: Db, start: CpuSample): Promise<{ processMs: number; serverMs: number }> {
  const u = process.cpuUsage();
  const pids = await serverPids(db);
  const known = new Set(start.pids);
  const serverMs = procCpuMs(start.pids) - start.serverMs + procCpuMs(pids.filter((p) => !known.has(p)));
  return { processMs: (u.user + u.system) / 1000 - start.processMs, serverMs };
}

/** CPU ms of each thread of this process now, by thread id (the main thread's id is the pid). */
export function threadCpuNow(): Map<string, number> {
  const out = new Map<string, number>();
  for (const tid of readdirSync('/proc/self/task')) {
    try {
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      out.set(tid, (Number(fields[11]) + Number(fields[12])) * TICK_MS);
    } catch {
      /* exited */
    }
  }
  return out;
}

/**
 * CPU ms each thread spent since `start`: the main thread, and the others
 * busiest first (Node names every thread "node": V8's helpers, which run
 * most of the garbage collector, libuv's pool and worker threads alike).
 */
export function threadCpuSince(start: Map<string, number>): { mainMs: number; othersMs: number[] } {
  let mainMs = 0;
  const othersMs: number[] = [];
  for (const [tid, ms] of threadCpuNow()) {
    const used = ms - (start.get(tid) ?? 0);
    if (tid === String(process.pid)) mainMs = used;
    else if (used > 0) othersMs.push(used);
  }
  return { mainMs, othersMs: othersMs.sort((a, b) => b - a) };
}

/** Collections of the main thread's heap: young generation (scavenges) and full (mark-compacts), with their pauses on the thread. */
export interface Collections {
  young: number;
  full: number;
  youngMs: number;
  fullMs: number;
}

const collected: Collections = { young: 0, full: 0, youngMs: 0, fullMs: 0 };
let gcObserver: PerformanceObserver | undefined;

function addCollections(entries: PerformanceEntry[]): void {
  for (const e of entries) {
    const kind = (e as PerformanceEntry & { detail?: { kind?: number } }).detail?.kind;
    if (kind === constants.NODE_PERFORMANCE_GC_MINOR) {
      collected.young++;
      collected.youngMs += e.duration;
    } else if (kind === constants.NODE_PERFORMANCE_GC_MAJOR) {
      collected.full++;
      collected.fullMs += e.duration;
    }
  }
}

/**
 * The main thread's collections so far (observed from the first call on).
 * Pauses only: a full collection's concurrent marking runs on V8's helper
 * threads, whose CPU threadCpuSince counts.
 */
export function collectionsNow(): Collections {
  if (!gcObserver) {
    gcObserver = new PerformanceObserver((list) => addCollections(list.getEntries()));
    gcObserver.observe({ entryTypes: ['gc'] });
  }
  // entries not yet handed to the callback
  addCollections(gcObserver.takeRecords());
  return { ...collected };
}

export function collectionsSince(start: Collections): Collections {
  const now = collectionsNow();
  return { young: now.young - start.young, full: now.full - start.full, youngMs: now.youngMs - start.youngMs, fullMs: now.fullMs - start.fullMs };
}
