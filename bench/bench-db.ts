/**
 * The database of a benchmark: PGlite in memory, or a fresh PostgreSQL
 * database beside DATABASE_URL when it is set (dropped by `drop`); migrated.
 * BENCH_PGLITE=disk: PGlite in a temporary data folder instead, as
 * `npm start` runs it (its files on the real file system, not in memory;
 * removed by `drop`).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Db } from '../src/db/db.ts';
import { migrate } from '../src/db/migrate.ts';
import { openPglite } from '../src/db/pglite.ts';
import { openPostgres } from '../src/db/postgres.ts';
import { createFreshDatabase } from '../test/helpers/db.ts';

/** Where a benchmark's PGlite keeps its files (BENCH_PGLITE). */
export const PGLITE = process.env.BENCH_PGLITE ?? 'memory';
if (PGLITE !== 'memory' && PGLITE !== 'disk') throw new Error(`BENCH_PGLITE must be memory or disk, not ${JSON.stringify(PGLITE)}`);

export function openBenchDb(): Promise<{ db: Db; drop: () => Promise<void> }> {
  return openBenchDbWith({ migrate, openPglite, openPostgres, createFreshDatabase });
}

/** The functions that open and migrate a database: this tree's, or another work tree's (bench/forward-trees.ts). */
export interface BenchDbModules {
  migrate: (db: Db) => Promise<unknown>;
  openPglite: (dataDir?: string) => Promise<Db>;
  openPostgres: (url: string, opts: { poolSize: number }) => Promise<Db>;
  createFreshDatabase: () => Promise<{ url: string; drop(): Promise<void> }>;
}

export async function openBenchDbWith(m: BenchDbModules): Promise<{ db: Db; drop: () => Promise<void> }> {
  let db: Db;
  let drop = async () => {};
  if (process.env.DATABASE_URL) {
    const fresh = await m.createFreshDatabase();
    db = await m.openPostgres(fresh.url, { poolSize: 10 });
    drop = fresh.drop;
  } else if (PGLITE === 'disk') {
    const dir = mkdtempSync(join(tmpdir(), 'weir-bench-pglite-'));
    db = await m.openPglite(dir);
    drop = async () => rmSync(dir, { recursive: true, force: true });
  } else {
    db = await m.openPglite();
  }
  await m.migrate(db);
  return { db, drop };
}
