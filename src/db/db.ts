/**
 * The one database interface every module takes. Two adapters implement it:
 * PGlite (embedded, single process) and PostgreSQL (node-postgres pool).
 * Only files in src/db import a driver.
 */
export interface QueryResult<R> {
  rows: R[];
  rowCount: number;
}

export interface QueryOptions {
  /**
   * Prepares the statement once per connection under this name and runs
   * it with ONE generic plan from its first run: every connection is opened
   * with plan_cache_mode = NAMED_PLAN_CACHE_MODE. PostgreSQL's default
   * re-plans a statement with its values for the first five runs, and
   * forever when the plans made with values look cheaper, which the
   * capture statement's always did: its plan cost more than its run, on
   * PGlite on the main thread (docs/performance.md). So a named statement
   * must be written so that a plan made without its values, and without
   * statistics (PGlite has none until table maintenance analyzes), reads
   * by index: the tests of each named statement pin its generic plan.
   * Plain (unnamed) statements are planned with their values every time.
   */
  name?: string;
}

/** The plan_cache_mode of every connection (QueryOptions.name). */
export const NAMED_PLAN_CACHE_MODE = 'force_generic_plan';

export interface Queryable {
  /**
   * One parameterised statement. bytea columns come back as Buffer.
   * `opts.name` prepares it once per connection under that name, with one
   * generic plan (QueryOptions.name): for a hot statement whose parse and
   * plan cost more than running it.
   */
  query<R = Record<string, unknown>>(text: string, params?: unknown[], opts?: QueryOptions): Promise<QueryResult<R>>;
  /** Several statements without parameters (migrations). */
  exec(sql: string): Promise<void>;
}

/** Settings by name (`enable_seqscan`) and value (`off`): constants of the code, never user input. */
export type Settings = Readonly<Record<string, string>>;

/** `set local` statements for `settings` (for TransactionOptions.settings), or `set` with `session`. */
export function setStatements(settings: Settings, session = false): string {
  return Object.entries(settings)
    .map(([name, value]) => {
      if (!/^[a-z_]+$/.test(name) || !/^[a-z0-9_]+$/.test(value)) throw new Error(`not a setting: ${name} = ${value}`);
      return `set ${session ? '' : 'local '}${name} = ${value}`;
    })
    .join('; ');
}

export interface TransactionOptions {
  /**
   * Statements without parameters (`set local ...`) that open the
   * transaction: on PostgreSQL sent together with BEGIN, in one round trip.
   */
  settings?: string;
}

export interface Db extends Queryable {
  readonly kind: 'pglite' | 'postgres';
  /** Runs fn in one transaction; commits when it resolves, rolls back when it throws. */
  transaction<T>(fn: (tx: Queryable) => Promise<T>, opts?: TransactionOptions): Promise<T>;
  /**
   * Runs fn with `settings` (planner and commit settings, name to value) in
   * force for its statements and for no one else's. Each of fn's statements
   * commits on its own, so a failed one undoes nothing before it. On
   * PostgreSQL they run on connections of their own opened with the
   * settings (at most two per distinct settings), so a statement is one
   * round trip; on PGlite, whose one connection is everyone's, each runs in
   * a transaction of its own that sets them locally, a named statement sent
   * with its BEGIN, the settings and its COMMIT in one call into the
   * backend (pglite.ts).
   */
  withSettings<T>(settings: Settings, fn: (q: Queryable) => Promise<T>): Promise<T>;
  /**
   * Runs fn on one connection, outside any transaction: for statements that
   * refuse a transaction block (VACUUM) under a session-level advisory lock.
   * PGlite has one connection, so there it is the database itself.
   */
  session<T>(fn: (conn: Queryable) => Promise<T>): Promise<T>;
  /**
   * Subscribes to a NOTIFY channel. `onReconnect` runs after the listening
   * connection was lost and re-established, because notifications sent while
   * it was down are gone: callers drop caches or re-scan instead.
   */
  listen(channel: string, onNotify: (payload: string) => void, onReconnect?: () => void): Promise<() => Promise<void>>;
  /** Whether every listen() subscription is currently connected. */
  listening(): boolean;
  /** The connection pool's state (PostgreSQL; PGlite has one connection and no pool). */
  poolStats?(): { total: number; idle: number; waiting: number };
  close(): Promise<void>;
}

/** Sends a notification; inside a transaction it is delivered on commit. */
export async function notify(db: Queryable, channel: string, payload: string): Promise<void> {
  await db.query('select pg_notify($1, $2)', [channel, payload]);
}

/** A bytea value as a Buffer without copying (PGlite hands out Uint8Array). */
export function asBuffer(value: Uint8Array | Buffer): Buffer {
  return Buffer.isBuffer(value) ? value : Buffer.from(value.buffer, value.byteOffset, value.byteLength);
}

/** PostgreSQL's SQLSTATE of a driver error, when it carries one. */
export function sqlState(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
}

export const UNIQUE_VIOLATION = '23505';
export const FOREIGN_KEY_VIOLATION = '23503';
