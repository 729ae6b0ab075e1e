import { parse, PGlite, protocol } from '@electric-sql/pglite';
import { mkdirSync } from 'node:fs';
import type { Db, Queryable, QueryOptions, QueryResult } from './db.ts';

const BYTEA = 17;

type PgliteLike = Pick<PGlite, 'query' | 'exec'>;

function wrap(conn: PgliteLike, named?: NamedQueries): Queryable {
  return {
    async query<R>(text: string, params?: unknown[], opts?: QueryOptions): Promise<QueryResult<R>> {
      const res = opts?.name && named ? await named.run<Record<string, unknown>>(opts.name, text, params ?? []) : await conn.query<Record<string, unknown>>(text, params);
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

type Res<R> = Awaited<ReturnType<PGlite['query']>> & { rows: R[] };

/**
 * Named statements for hot queries. PGlite's query() sends Parse, Describe,
 * Bind, Describe, Execute and Sync as six calls into the WebAssembly backend
 * and parses and plans the statement every time; for the capture statement
 * that was most of its cost. Here a name is parsed once (with Describe, for
 * the parameter types), then every run is ONE call: Bind, Execute, Sync.
 * Buffer parameters travel in binary format (no hex). Runs take both of
 * PGlite's locks, as query() does, so they never land inside someone else's
 * transaction.
 */
class NamedQueries {
  private readonly prepared = new Map<string, { text: string; types: number[] }>();

  constructor(private readonly pg: PGlite) {}

  run<R>(name: string, text: string, params: unknown[]): Promise<Res<R>> {
    return this.pg._runExclusiveTransaction(() =>
      this.pg._runExclusiveQuery(async () => {
        const { serialize } = protocol;
        let stmt = this.prepared.get(name);
        if (stmt && stmt.text !== text) throw new Error(`statement name ${name} is already used by another statement`);
        if (!stmt) {
          const { messages } = await this.pg.execProtocol(Buffer.concat([serialize.parse({ name, text }), serialize.describe({ type: 'S', name }), serialize.sync()]), { syncToFs: false });
          stmt = { text, types: parse.parseDescribeStatementResults(messages) };
          this.prepared.set(name, stmt);
        }
        const types = stmt.types;
        const values = params.map((v, i) => {
          if (v === null || v === undefined) return null;
          if (v instanceof Uint8Array || typeof v === 'string') return v;
          const ser = this.pg.serializers[types[i]];
          return ser ? ser(v) : String(v);
        });
        const { messages } = await this.pg.execProtocol(
          Buffer.concat([serialize.bind({ statement: name, values }), serialize.describe({ type: 'P' }), serialize.execute(), serialize.sync()]),
        );
        return parse.parseResults(messages, this.pg.parsers)[0] as Res<R>;
      }),
    );
  }
}

/**
 * Embedded PostgreSQL (PGlite, WebAssembly) in `dataDir`, or in memory when
 * dataDir is undefined. One process owns the folder: PGlite has a single
 * connection, so queries and transactions run one after another.
 */
export async function openPglite(dataDir?: string): Promise<Db> {
  if (dataDir) mkdirSync(dataDir, { recursive: true });
  const pg = await PGlite.create(dataDir ? { dataDir } : {});
  const base = wrap(pg, new NamedQueries(pg));
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
