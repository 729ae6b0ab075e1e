import { parse, PGlite, protocol } from '@electric-sql/pglite';
import { mkdirSync } from 'node:fs';
import { NAMED_PLAN_CACHE_MODE, setStatements, type Db, type Queryable, type QueryOptions, type QueryResult, type TransactionOptions } from './db.ts';
import { startCheckpoints, type CheckpointOptions } from './pglite-checkpoints.ts';
import { enableNodeFsync, pgliteStartParams } from './pglite-fsync.ts';
import { RawOutput, readResult, type RawResult } from './pglite-results.ts';

const BYTEA = 17;

type PgliteLike = Pick<PGlite, 'query' | 'exec'>;

function asQueryResult<R>(res: RawResult): QueryResult<R> {
  return { rows: res.rows as R[], rowCount: res.affectedRows };
}

function wrap(conn: PgliteLike, named?: NamedQueries): Queryable {
  return {
    async query<R>(text: string, params?: unknown[], opts?: QueryOptions): Promise<QueryResult<R>> {
      // its bytea columns arrive in binary, already Buffers (pglite-results.ts)
      if (opts?.name && named) return asQueryResult(await named.run(opts.name, text, params ?? []));
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
 * Named statements for hot queries. PGlite's query() sends Parse, Describe,
 * Bind, Describe, Execute and Sync as six calls into the WebAssembly backend
 * and parses and plans the statement every time; for the capture statement
 * that was most of its cost. Here a name is parsed once (with Describe, for
 * the parameter types), then every run is ONE call: Bind, Describe,
 * Execute, Sync (bindAndExecute). Buffer parameters travel in binary format
 * (no hex). Runs take both of PGlite's locks, as query() does, so they never
 * land inside someone else's transaction. Their output is read by
 * pglite-results.ts, not by PGlite's reader, so notifications it carries are
 * handed to `listeners` here.
 */
class NamedQueries {

  /**
   * `inTransaction`: from inside pg.transaction(), which already holds the
   * transaction lock (its own queries take the query lock alone, as here),
   * and whose COMMIT writes to the file system (so no sync per statement).
   */
  constructor(
    private readonly pg: PGlite,
    private readonly inTransaction = false,
    /** Parsed statements: one connection, so shared with the in-transaction runner (a Parse outlives a rollback). */
    private readonly prepared = new Map<string, { text: string; types: number[]; resultFormats: number[] }>(),
    /** Db.listen's callbacks by channel, for notifications in a named statement's output. */
    readonly listeners = new Map<string, Set<(payload: string) => void>>(),
  ) {}

  /** The same statements, run from inside pg.transaction(). */
  inTransactionRunner(): NamedQueries {
    return new NamedQueries(this.pg, true, this.prepared, this.listeners);
  }

  private readonly notify = (channel: string, payload: string): void => {
    // as PGlite delivers its own: each listener in a microtask of its own
    for (const listener of this.listeners.get(channel) ?? []) queueMicrotask(() => listener(payload));
  };

  run(name: string, text: string, params: unknown[]): Promise<RawResult> {
    return this.runIn(name, text, params);
  }

  /**
   * Runs a named statement in a transaction of its own that opens with
   * `settings` (`set local ...`: Db.withSettings), in ONE call into the
   * backend: a simple Query of `begin` and the settings, the statement's
   * Bind/Describe/Execute/Sync, and a Query of `commit`, in one buffer
   * (PGlite's backend reads every message it is given). Through
   * pg.transaction() the same took four calls, BEGIN, the settings, the
   * statement and COMMIT, each parsed and answered on its own: about 185 µs
   * more a claim or completion on PGlite (docs/forwarding.md). When the
   * statement fails, the backend skips to the Sync and the `commit` of an
   * aborted transaction rolls it back, so the transaction always ends
   * within the call, and the error is thrown as from run().
   */
  runWithSettings(name: string, text: string, params: unknown[], settings: string): Promise<RawResult> {
    let wrap = this.settingsWrappers.get(settings);
    if (!wrap) {
      wrap = { open: protocol.serialize.query(`begin; ${settings}`), close: protocol.serialize.query('commit') };
      this.settingsWrappers.set(settings, wrap);
    }
    return this.runIn(name, text, params, wrap);
  }

  /** The Query messages that open (with the settings) and close runWithSettings' transactions, by settings. */
  private readonly settingsWrappers = new Map<string, { open: Uint8Array; close: Uint8Array }>();

  private runIn(name: string, text: string, params: unknown[], wrap?: { open: Uint8Array; close: Uint8Array }): Promise<RawResult> {
    if (wrap && this.inTransaction) throw new Error('runWithSettings opens a transaction of its own: not from inside one');
    const exclusive = <T>(fn: () => Promise<T>) => (this.inTransaction ? fn() : this.pg._runExclusiveTransaction(fn));
    return exclusive(() =>
      this.pg._runExclusiveQuery(async () => {
        const { serialize } = protocol;
        let stmt = this.prepared.get(name);
        if (stmt && stmt.text !== text) throw new Error(`statement name ${name} is already used by another statement`);
        if (!stmt) {
          const { messages } = await this.pg.execProtocol(Buffer.concat([serialize.parse({ name, text }), serialize.describe({ type: 'S', name }), serialize.sync()]), { syncToFs: false });
          const columns = messages.find((m): m is InstanceType<typeof protocol.messages.RowDescriptionMessage> => m.name === 'rowDescription')?.fields ?? [];
          // bytea results in binary: no hex written by the database, none read here
          const resultFormats = columns.some((c) => c.dataTypeID === BYTEA) ? columns.map((c) => (c.dataTypeID === BYTEA ? 1 : 0)) : [];
          stmt = { text, types: parse.parseDescribeStatementResults(messages), resultFormats };
          this.prepared.set(name, stmt);
        }
        const types = stmt.types;
        const values = params.map((v, i) => {
          if (v === null || v === undefined) return null;
          if (v instanceof Uint8Array || typeof v === 'string') return v;
          const ser = this.pg.serializers[types[i]];
          return ser ? ser(v) : String(v);
        });
        const output = new RawOutput();
        const run = bindAndExecute(name, values, stmt.resultFormats);
        const message = wrap ? Buffer.concat([wrap.open, run, wrap.close]) : run;
        await this.pg.execProtocolRawStream(message, { syncToFs: !this.inTransaction, onRawData: output.take });
        return readResult(output.bytes(), this.pg.parsers, this.notify);
      }),
    );
  }
}

/** A channel's name as PostgreSQL keeps it (and as a notification names it): folded to lower case unless quoted. */
function postgresName(channel: string): string {
  return channel.startsWith('"') && channel.endsWith('"') ? channel.slice(1, -1) : channel.toLowerCase();
}

// Describe (portal ''), Execute (portal '', no row limit), Sync.
const DESCRIBE_EXECUTE_SYNC = Buffer.from([0x44, 0, 0, 0, 6, 0x50, 0, 0x45, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0x53, 0, 0, 0, 4]);

/**
 * One run of a prepared statement as protocol bytes: Bind (unnamed portal;
 * strings as text, byte arrays as binary; results as text, or in the formats
 * given, one a column: 0 text, 1 binary), then
 * DESCRIBE_EXECUTE_SYNC. Written into one buffer of the exact size: the
 * generic serialiser copied a large bytea parameter three times and encoded
 * strings character by character, a visible share of a capture group's cost.
 */
export function bindAndExecute(statement: string, values: readonly (string | Uint8Array | null)[], resultFormats: readonly number[] = []): Buffer {
  const n = values.length;
  const lengths = new Array<number>(n);
  let bind = 4 + 1 + Buffer.byteLength(statement) + 1 + 2 + 2 * n + 2 + 2 + 2 * resultFormats.length;
  for (let i = 0; i < n; i++) {
    const v = values[i];
    lengths[i] = v === null ? -1 : typeof v === 'string' ? Buffer.byteLength(v) : v.byteLength;
    bind += 4 + Math.max(0, lengths[i]);
  }
  const buf = Buffer.allocUnsafe(1 + bind + DESCRIBE_EXECUTE_SYNC.length);
  let o = buf.writeUInt8(0x42, 0);
  o = buf.writeInt32BE(bind, o);
  o = buf.writeUInt8(0, o);
  o += buf.write(statement, o);
  o = buf.writeUInt8(0, o);
  o = buf.writeInt16BE(n, o);
  for (let i = 0; i < n; i++) o = buf.writeInt16BE(values[i] instanceof Uint8Array ? 1 : 0, o);
  o = buf.writeInt16BE(n, o);
  for (let i = 0; i < n; i++) {
    const v = values[i];
    o = buf.writeInt32BE(lengths[i], o);
    if (typeof v === 'string') o += buf.write(v, o);
    else if (v !== null) {
      buf.set(v, o);
      o += v.byteLength;
    }
  }
  o = buf.writeInt16BE(resultFormats.length, o);
  for (const format of resultFormats) o = buf.writeInt16BE(format, o);
  DESCRIBE_EXECUTE_SYNC.copy(buf, o);
  return buf;
}

/**
 * In memory, a new WAL segment is not filled with zeros first
 * (wal_init_zero). The in-memory file system grows a file by an eighth at a
 * time, copying it whole each time, so zero-filling a 16 MB segment in 8 KB
 * writes copied about 190 MB: in the forwarding benchmark, 4 % of the
 * process's time (docs/forwarding.md). Zero-filling reserves disk space
 * ahead of the WAL's writes; in memory there is no disk to reserve. A data
 * folder keeps PostgreSQL's default.
 */
const IN_MEMORY_START_PARAMS = [...PGlite.defaultStartParams, '-c', 'wal_init_zero=off'];

/**
 * Embedded PostgreSQL (PGlite, WebAssembly) in `dataDir`, or in memory when
 * dataDir is undefined. One process owns the folder: PGlite has a single
 * connection, so queries and transactions run one after another.
 */
export async function openPglite(dataDir?: string, opts: { checkpoints?: CheckpointOptions; fsync?: boolean } = {}): Promise<Db> {
  if (dataDir) mkdirSync(dataDir, { recursive: true });
  // fsync: commits survive power loss, not only a crash of the process (src/db/pglite-fsync.ts)
  const durable = Boolean(opts.fsync && dataDir);
  const pg = await PGlite.create(dataDir ? { dataDir, startParams: pgliteStartParams(durable) } : { startParams: IN_MEMORY_START_PARAMS });
  if (durable) enableNodeFsync(pg);
  // named statements run one generic plan from their first run (QueryOptions.name, db.ts)
  await pg.exec(`set plan_cache_mode = ${NAMED_PLAN_CACHE_MODE}`);
  const named = new NamedQueries(pg);
  const base = wrap(pg, named);
  const namedInTransaction = named.inTransactionRunner();
  const checkpoints = startCheckpoints(pg, opts.checkpoints);
  const transaction = <T>(fn: (tx: Queryable) => Promise<T>, o?: TransactionOptions): Promise<T> =>
    pg.transaction(async (tx) => {
      if (o?.settings) await tx.exec(o.settings);
      return fn(wrap(tx, namedInTransaction));
    });
  return {
    kind: 'pglite',
    ...base,
    transaction,
    withSettings: async (settings, fn) => {
      // each statement in a transaction of its own that sets them locally; a named one in one call (runWithSettings)
      const set = setStatements(settings);
      return fn({
        query: async <R>(text: string, params?: unknown[], opts?: QueryOptions): Promise<QueryResult<R>> =>
          opts?.name ? asQueryResult<R>(await named.runWithSettings(opts.name, text, params ?? [], set)) : transaction((tx) => tx.query<R>(text, params), { settings: set }),
        exec: (sql) => transaction((tx) => tx.exec(sql), { settings: set }),
      });
    },
    session: (fn) => fn(base),
    async listen(channel, onNotify) {
      // LISTEN in PGlite is in-process: it never disconnects, so onReconnect never runs.
      // PGlite calls onNotify for notifications its own reader sees (query, exec);
      // the named statements' reader calls it from `named.listeners`.
      const unlisten = await pg.listen(channel, onNotify);
      const key = postgresName(channel);
      const set = named.listeners.get(key) ?? new Set();
      named.listeners.set(key, set.add(onNotify));
      return async () => {
        set.delete(onNotify);
        if (set.size === 0 && named.listeners.get(key) === set) named.listeners.delete(key);
        await unlisten();
      };
    },
    listening: () => !pg.closed,
    async close() {
      await checkpoints.stop();
      if (!pg.closed) await pg.close();
    },
  };
}
