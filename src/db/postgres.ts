import pg from 'pg';
import { UnsupportedPostgresError, unsupportedPostgres } from './server-version.ts';
import { NAMED_PLAN_CACHE_MODE, setStatements, type Db, type Queryable, type QueryOptions, type QueryResult, type Settings } from './db.ts';

type Conn = pg.Pool | pg.PoolClient;

function wrap(conn: Conn): Queryable {
  return {
    async query<R>(text: string, params?: unknown[], opts?: QueryOptions): Promise<QueryResult<R>> {
      const res = await run(conn, opts?.name ? { name: opts.name, text, values: params } : { text, values: params });
      return { rows: res.rows as R[], rowCount: res.rowCount ?? res.rows.length };
    },
    async exec(sql: string): Promise<void> {
      await run(conn, { text: sql });
    },
  };
}

/**
 * One statement through node-postgres' callback interface. Its promise
 * interface on a checked-out client (`client.query(config)` without a
 * callback) had every result it returned promoted to the old generation
 * instead of dying young: a claim's 64 rows, their strings and its Query,
 * every time, about 2 MB a young collection, each of which then took 4-5
 * times as long (why, node-postgres' code does not show)
 * (docs/forwarding.md, "Results the collector promoted"). A pool's
 * query() already runs on the callback interface; every statement of the
 * adapter but the LISTEN connection's goes through here. The error's stack is
 * taken again here, as node-postgres' promise does, so that it leads back
 * to the caller and not to the socket's read.
 */
async function run(conn: Conn, config: pg.QueryConfig): Promise<pg.QueryResult> {
  try {
    return await new Promise<pg.QueryResult>((resolve, reject) => {
      conn.query(config, (err: Error | undefined, res: pg.QueryResult) => (err ? reject(err) : resolve(res)));
    });
  } catch (err) {
    if (err instanceof Error) Error.captureStackTrace(err);
    throw err;
  }
}

interface Subscription {
  channel: string;
  onNotify: (payload: string) => void;
  onReconnect?: () => void;
}

// A LISTEN connection that died without a FIN (a dropped NAT entry, a
// pulled cable) would otherwise look alive until TCP gives up, minutes later,
// while notifications silently stop: a cheap query every few seconds bounds that.
const HEARTBEAT_MS = 5_000;
export const LISTENER_APPLICATION_NAME = 'weir listen';
const HEARTBEAT_TIMEOUT_MS = 5_000;

/**
 * One dedicated connection carries every LISTEN of this process. When it
 * drops it is re-opened with backoff; subscribers are told through
 * onReconnect because anything notified in between is lost. onReconnect runs
 * in the same tick as the connection is marked live again, so nobody sees
 * `listening()` true before subscribers have dropped what they cached.
 */
class Listener {
  private client: pg.Client | undefined;
  private readonly subs = new Set<Subscription>();
  private connected = false;
  private closed = false;
  private connecting: Promise<void> | undefined;
  private retryMs = 100;
  private everConnected = false;
  private heartbeat: NodeJS.Timeout | undefined;

  constructor(private readonly connectionString: string, private readonly log: (msg: string, err?: unknown) => void) {}

  isConnected(): boolean {
    return this.connected || this.subs.size === 0;
  }

  async add(sub: Subscription): Promise<() => Promise<void>> {
    this.subs.add(sub);
    try {
      await this.ensure();
      await this.client?.query(`LISTEN ${quoteIdent(sub.channel)}`);
    } catch (err) {
      this.subs.delete(sub);
      throw err;
    }
    return async () => {
      this.subs.delete(sub);
      const stillUsed = [...this.subs].some((s) => s.channel === sub.channel);
      if (!stillUsed && this.connected) await this.client?.query(`UNLISTEN ${quoteIdent(sub.channel)}`).catch(() => {});
    };
  }

  private ensure(): Promise<void> {
    if (this.connected || this.closed) return Promise.resolve();
    this.connecting ??= this.connect().finally(() => {
      this.connecting = undefined;
    });
    return this.connecting;
  }

  private async connect(): Promise<void> {
    // Named, so an operator (or a test) can tell it apart in pg_stat_activity.
    const client = new pg.Client({ connectionString: this.connectionString, keepAlive: true, application_name: LISTENER_APPLICATION_NAME });
    client.on('notification', (msg) => {
      for (const s of this.subs) if (s.channel === msg.channel) s.onNotify(msg.payload ?? '');
    });
    client.on('error', (err) => this.lost(client, err));
    client.on('end', () => this.lost(client));
    try {
      await client.connect();
      for (const ch of new Set([...this.subs].map((s) => s.channel))) await client.query(`LISTEN ${quoteIdent(ch)}`);
    } catch (err) {
      client.removeAllListeners('end');
      client.on('error', () => {});
      await client.end().catch(() => {});
      throw err;
    }
    if (this.closed) {
      client.removeAllListeners('end');
      await client.end().catch(() => {});
      return;
    }
    this.client = client;
    this.connected = true;
    this.retryMs = 100;
    this.startHeartbeat(client);
    if (this.everConnected) {
      this.log('listen connection re-established');
      for (const s of this.subs) s.onReconnect?.();
    }
    this.everConnected = true;
  }

  private startHeartbeat(client: pg.Client): void {
    clearInterval(this.heartbeat);
    this.heartbeat = setInterval(() => {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error('listen connection heartbeat timed out')), HEARTBEAT_TIMEOUT_MS);
      });
      Promise.race([client.query('select 1'), timeout])
        .catch((err) => this.lost(client, err))
        .finally(() => clearTimeout(timer));
    }, HEARTBEAT_MS);
    this.heartbeat.unref();
  }

  private lost(client: pg.Client, err?: unknown): void {
    if (this.client !== client || this.closed) return;
    this.connected = false;
    this.client = undefined;
    clearInterval(this.heartbeat);
    this.log('listen connection lost; reconnecting', err);
    client.removeAllListeners('end');
    client.on('error', () => {});
    client.end().catch(() => {});
    const retry = () => {
      if (this.closed) return;
      this.ensure().catch((e) => {
        this.log('listen reconnect failed', e);
        this.retryMs = Math.min(this.retryMs * 2, 5000);
        setTimeout(retry, this.retryMs).unref();
      });
    };
    setTimeout(retry, this.retryMs).unref();
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.heartbeat);
    const c = this.client;
    this.client = undefined;
    this.connected = false;
    if (c) {
      c.removeAllListeners('end');
      c.on('error', () => {});
      await c.end().catch(() => {});
    }
  }
}

function quoteIdent(name: string): string {
  return '"' + name.replace(/"/g, '""') + '"';
}

export interface PostgresOptions {
  poolSize?: number;
  log?: (msg: string, err?: unknown) => void;
}

export async function openPostgres(connectionString: string, opts: PostgresOptions = {}): Promise<Db> {
  const log = opts.log ?? (() => {});
  // named statements run one generic plan from their first run (QueryOptions.name, db.ts); a
  // DATABASE_URL with an `options` parameter of its own replaces this (node-postgres prefers the URL's)
  const options = `-c plan_cache_mode=${NAMED_PLAN_CACHE_MODE}`;
  const pool = new pg.Pool({ connectionString, options, max: opts.poolSize ?? 10 });
  // An idle client's error (server restart) must not crash the process; the pool replaces it.
  pool.on('error', (err) => log('idle database connection error', err));
  const { rows } = await pool.query<{ num: number; version: string }>(
    `select current_setting('server_version_num')::int as num, current_setting('server_version') as version`,
  );
  const refused = unsupportedPostgres(rows[0].num, rows[0].version);
  if (refused) {
    await pool.end();
    throw new UnsupportedPostgresError(refused);
  }
  const listener = new Listener(connectionString, log);
  // withSettings: a pool per distinct settings, whose connections are set
  // once, by the first call that checks each of them out. The SET is awaited
  // before fn's first statement, on the connection fn is then given: not
  // queued behind pg-pool's 'connect' event, which makes the pool's own first
  // query run while the SET is still executing (node-postgres deprecates
  // that and prints a DeprecationWarning into the operator's log).
  const settingsPools = new Map<string, pg.Pool>();
  const settingsPool = (settings: Settings): [pg.Pool, string] => {
    const sql = setStatements(settings, true);
    let p = settingsPools.get(sql);
    if (!p) {
      p = new pg.Pool({ connectionString, options, max: 2 });
      p.on('error', (err) => log('idle database connection error', err));
      settingsPools.set(sql, p);
    }
    return [p, sql];
  };
  const settled = new WeakSet<pg.PoolClient>();
  return {
    kind: 'postgres',
    ...wrap(pool),
    async transaction(fn, opts) {
      const client = await pool.connect();
      let result;
      try {
        // one simple query: BEGIN and the settings are a single round trip
        await run(client, { text: opts?.settings ? `BEGIN; ${opts.settings}` : 'BEGIN' });
        result = await fn(wrap(client));
        // PostgreSQL answers COMMIT of a transaction in which a statement
        // failed (and the error was caught) with a silent ROLLBACK. Throw, as
        // PGlite does, rather than report writes that never happened.
        const commit = await run(client, { text: 'COMMIT' });
        if (commit.command === 'ROLLBACK') {
          throw Object.assign(new Error('Transaction was rolled back instead of committed: a statement in it failed'), { code: '25P02' });
        }
      } catch (err) {
        // A connection that cannot even roll back is broken: destroy it rather than pool it.
        const broken = await run(client, { text: 'ROLLBACK' }).then(
          () => false,
          () => true,
        );
        client.release(broken);
        throw err;
      }
      client.release();
      return result;
    },
    async withSettings(settings, fn) {
      const [p, sql] = settingsPool(settings);
      const client = await p.connect();
      try {
        if (!settled.has(client)) {
          await run(client, { text: sql });
          settled.add(client);
        }
      } catch (err) {
        // a connection whose settings could not be applied is not handed out again
        client.release(true);
        throw err;
      }
      try {
        return await fn(wrap(client));
      } finally {
        // a failed statement leaves an autocommit connection as it was; a broken one pg-pool drops itself
        client.release();
      }
    },
    async session(fn) {
      const client = await pool.connect();
      let broken = false;
      try {
        return await fn(wrap(client));
      } catch (err) {
        // A session may hold advisory locks or settings: never hand it back in an unknown state.
        broken = true;
        throw err;
      } finally {
        client.release(broken);
      }
    },
    listen: (channel, onNotify, onReconnect) => listener.add({ channel, onNotify, onReconnect }),
    listening: () => listener.isConnected(),
    poolStats: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
    async close() {
      await listener.close();
      await Promise.all([pool, ...settingsPools.values()].map((p) => p.end()));
    },
  };
}
