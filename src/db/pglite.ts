import { PGlite } from '@electric-sql/pglite';
import { mkdirSync } from 'node:fs';
import type { Db, Queryable, QueryResult } from './db.ts';

const BYTEA = 17;

type PgliteLike = Pick<PGlite, 'query' | 'exec'>;

function wrap(conn: PgliteLike): Queryable {
  return {
    async query<R>(text: string, params?: unknown[]): Promise<QueryResult<R>> {
      const res = await conn.query<Record<string, unknown>>(text, params);
      const byteaFields = res.fields.filter((f) => f.dataTypeID === BYTEA).map((f) => f.name);
      if (byteaFields.length > 0) {
        for (const row of res.rows) {
          for (const name of byteaFields) {
            const v = row[name];
            if (v instanceof Uint8Array && !Buffer.isBuffer(v)) row[name] = Buffer.from(v.buffer, v.byteOffset, v.byteLength);
          }
        }
      }
      return { rows: res.rows as R[], rowCount: res.affectedRows ?? res.rows.length };
    },
    async exec(sql: string): Promise<void> {
      await conn.exec(sql);
    },
  };
}

/**
 * Embedded PostgreSQL (PGlite, WebAssembly) in `dataDir`, or in memory when
 * dataDir is undefined. One process owns the folder: PGlite has a single
 * connection, so queries and transactions run one after another.
 */
export async function openPglite(dataDir?: string): Promise<Db> {
  if (dataDir) mkdirSync(dataDir, { recursive: true });
  const pg = await PGlite.create(dataDir ? { dataDir } : {});
  const base = wrap(pg);
  return {
    kind: 'pglite',
    ...base,
    transaction: (fn) => pg.transaction((tx) => fn(wrap(tx))),
    async listen(channel, onNotify) {
      // LISTEN in PGlite is in-process: it never disconnects, so onReconnect never runs.
      const unlisten = await pg.listen(channel, onNotify);
      return async () => unlisten();
    },
    listening: () => !pg.closed,
    async close() {
      if (!pg.closed) await pg.close();
    },
  };
}
