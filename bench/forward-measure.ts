/**
 * What bench/forward.ts measures besides rates: statements sent through
 * the Db interface (a counting wrapper: every query and exec is one round
 * trip, a transaction adds its BEGIN and COMMIT), and CPU time, of this
 * process and, on PostgreSQL, of the server processes serving this
 * benchmark's database (read from /proc, so only this run's backends count,
 * not other work on the machine).
 */
import { readFileSync } from 'node:fs';
import type { Db, Queryable } from '../src/db/db.ts';

export interface Counter {
  statements: number;
}

function countQueries(q: Queryable, c: Counter): Queryable {
  return {
    query: (text, params, opts) => {
      c.statements++;
      return q.query(text, params, opts);
    },
    exec: (sql) => {
      c.statements++;
      return q.exec(sql);
    },
  };
}

/** The same database, counting each statement it is sent into `c`. */
export function counted(db: Db, c: Counter): Db {
  const q = countQueries(db, c);
  return {
    kind: db.kind,
    query: q.query,
    exec: q.exec,
    transaction: (fn) => {
      c.statements += 2; // BEGIN, COMMIT
      return db.transaction((tx) => fn(countQueries(tx, c)));
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
function procCpuMs(pids: number[]): number {
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

/** The PostgreSQL backends serving this database now (PGlite: none, it runs in this process). */
async function serverPids(db: Db): Promise<number[]> {
  if (db.kind !== 'postgres') return [];
  const { rows } = await db.query<{ pid: number }>('select pid from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()');
  return rows.map((r) => Number(r.pid));
}

export interface CpuSample {
  processMs: number;
  serverMs: number;
  pids: number[];
}

export async function cpuNow(db: Db): Promise<CpuSample> {
  const u = process.cpuUsage();
  const pids = await serverPids(db);
  return { processMs: (u.user + u.system) / 1000, serverMs: procCpuMs(pids), pids };
}

/** CPU spent since `start`: this process, and the same server backends (plus any that started since). */
export async function cpuSince(db: Db, start: CpuSample): Promise<{ processMs: number; serverMs: number }> {
  const u = process.cpuUsage();
  const pids = await serverPids(db);
  const known = new Set(start.pids);
  const serverMs = procCpuMs(start.pids) - start.serverMs + procCpuMs(pids.filter((p) => !known.has(p)));
  return { processMs: (u.user + u.system) / 1000 - start.processMs, serverMs };
}
