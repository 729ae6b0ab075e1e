/**
 * The database of a benchmark: PGlite in memory, or a fresh PostgreSQL
 * database beside DATABASE_URL when it is set (dropped by `drop`); migrated.
 */
import type { Db } from '../src/db/db.ts';
import { migrate } from '../src/db/migrate.ts';
import { openPglite } from '../src/db/pglite.ts';
import { openPostgres } from '../src/db/postgres.ts';
import { createFreshDatabase } from '../test/helpers/db.ts';

export async function openBenchDb(): Promise<{ db: Db; drop: () => Promise<void> }> {
  let db: Db;
  let drop = async () => {};
  if (process.env.DATABASE_URL) {
    const fresh = await createFreshDatabase();
    db = await openPostgres(fresh.url, { poolSize: 10 });
    drop = fresh.drop;
  } else {
    db = await openPglite();
  }
  await migrate(db);
  return { db, drop };
}
