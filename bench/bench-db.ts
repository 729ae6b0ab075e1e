/**
 * The database of a benchmark: PGlite in memory, or a fresh PostgreSQL
 * database beside DATABASE_URL when it is set (dropped by `drop`); migrated.
 */
import type { Db } from '../src/db/db.ts';
import { migrate } from '../src/db/migrate.ts';
import { openPglite } from '../src/db/pglite.ts';
import { openPostgres } from '../src/db/postgres.ts';
import { createFreshDatabase } from '../test/helpers/db.ts';

export function openBenchDb(): Promise<{ db: Db; drop: () => Promise<void> }> {
  return openBenchDbWith({ migrate, openPglite, openPostgres, createFreshDatabase });
}

/** The functions that open and migrate a database: this tree's, or another work tree's (bench/forward-trees.ts). */
export interface BenchDbModules {
  migrate: (db: Db) => Promise<unknown>;
  openPglite: () => Promise<Db>;
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
  } else {
    db = await m.openPglite();
  }
  await m.migrate(db);
  return { db, drop };
}
