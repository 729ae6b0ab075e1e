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
  name?: string;
}

export interface Queryable {
  /**
   * One parameterised statement. bytea columns come back as Buffer.
   * `opts.name` prepares it once per connection under that name (PostgreSQL):
   * for a hot statement whose parse and plan cost more than running it.
   */
  query<R = Record<string, unknown>>(text: string, params?: unknown[], opts?: QueryOptions): Promise<QueryResult<R>>;
  /** Several statements without parameters (migrations). */
  exec(sql: string): Promise<void>;
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
