import { after, afterEach, before, beforeEach } from 'node:test';
import pino from 'pino';
import type { Db } from '../../src/db/db.ts';
import { HttpTransport, type HttpTransportOptions } from '../../src/delivery/http-transport.ts';
import { handedDelivery } from '../../src/delivery/handoff.ts';
import { ThreadedHttpTransport } from '../../src/delivery/thread-transport.ts';
import type { ClaimedDelivery } from '../../src/delivery/transport.ts';
import { DeliveryWorker, type WorkerOptions } from '../../src/delivery/worker.ts';
import { createOrganization } from '../../src/orgs/organizations.ts';
import { openTestDb, type TestDb } from '../helpers/db.ts';
import { insertEndpoint, type EndpointFixture } from '../helpers/fixtures.ts';
import { startReceiver, testCa, type Receiver } from '../helpers/https.ts';

export const silent = pino({ level: 'silent' });

/** The HTTPS transport trusting the test CA, reaching loopback receivers unless told otherwise. */
export function testTransport(opts: Partial<HttpTransportOptions> = {}): HttpTransport {
  return new HttpTransport({ allowPrivate: true, connectTimeoutMs: 5_000, timeoutMs: 10_000, ca: testCa().ca, ...opts });
}

/**
 * The HTTPS transport on its own thread (as a PGlite node runs it), its
 * thread already running: a thread starts on the first send, and under
 * tsx that takes long enough to run past a test's short claim-ahead wait.
 */
async function warmThread(opts: Partial<HttpTransportOptions> & { queueLimit: number }): Promise<ThreadedHttpTransport> {
  const t = new ThreadedHttpTransport({ allowPrivate: true, connectTimeoutMs: 5_000, timeoutMs: 10_000, ca: testCa().ca, ...opts });
  const rx = await startReceiver();
  try {
    await t.send(claimedDelivery(rx.url), new AbortController().signal);
  } finally {
    await rx.close();
  }
  return t;
}

/** A claimed HTTPS delivery of a small text capture to `url`, for calling a transport directly: what a claim, or the hand-off, gives a worker. */
export function claimedDelivery(url: string): ClaimedDelivery {
  const capture = {
    id: '00000000-0000-7000-8000-000000000003',
    organization_id: '00000000-0000-7000-8000-000000000002',
    endpoint_id: '00000000-0000-7000-8000-000000000004',
    received_at: new Date(0),
    method: 'POST',
    path: '',
    query: '',
    headers: [['content-type', 'text/plain']] as [string, string][],
    body: Buffer.from('hi'),
  };
  return handedDelivery(['00000000-0000-7000-8000-000000000001', '00000000-0000-4000-8000-000000000001', capture.id, null, url, null, null, null, null, null, null], capture);
}

let workers = 0;

/** A started worker on `db` with the test transport; stop it in the test (or afterEach). */
export async function startTestWorker(
  db: Db,
  opts: { transport?: Partial<HttpTransportOptions>; threaded?: boolean } & Partial<Omit<WorkerOptions, 'transport'>> = {},
): Promise<DeliveryWorker> {
  const { transport, threaded, ...rest } = opts;
  const concurrency = rest.concurrency ?? 8;
  const w = new DeliveryWorker({
    db,
    logger: silent,
    node: `test-node-${++workers}`,
    transport: threaded ? await warmThread({ ...transport, queueLimit: concurrency }) : testTransport(transport),
    concurrency,
    leaseMs: 30_000,
    pollMs: 1_000,
    ...rest,
  });
  await w.start();
  return w;
}

export interface WorkerTest {
  readonly testDb: TestDb;
  readonly db: Db;
  /** The test's worker, if it started one: stopped and cleared after each test. */
  worker: DeliveryWorker | undefined;
  /** Receivers closed after each test. */
  readonly receivers: Receiver[];
  /** startReceiver(), closed after the test. */
  receiver(...args: Parameters<typeof startReceiver>): Promise<Receiver>;
}

/**
 * The shared hooks of the worker tests, for the enclosing describe(): one
 * database opened before, reset before each test and closed after; after each
 * test the worker is stopped (with `stopGraceMs`, else the worker's default
 * grace) and the receivers closed. `db` is valid once `before` has run.
 */
export function useWorkerTest(opts: { stopGraceMs?: number } = {}): WorkerTest {
  let testDb: TestDb | undefined;
  const ready = () => {
    if (!testDb) throw new Error('useWorkerTest(): used before its before() hook ran');
    return testDb;
  };
  const receivers: Receiver[] = [];
  const w: WorkerTest = {
    get testDb() {
      return ready();
    },
    get db() {
      return ready().db;
    },
    worker: undefined,
    receivers,
    async receiver(...args) {
      const r = await startReceiver(...args);
      receivers.push(r);
      return r;
    },
  };
  before(async () => {
    testDb = await openTestDb();
  });
  beforeEach(() => ready().reset());
  afterEach(async () => {
    await w.worker?.stop(opts.stopGraceMs);
    w.worker = undefined;
    await Promise.all(receivers.splice(0).map((r) => r.close()));
  });
  after(() => testDb?.close());
  return w;
}

/** Polls `check` until it returns a value other than undefined/false; fails (not hangs) after `timeoutMs`. */
export async function waitUntil<T>(check: () => Promise<T | undefined | false>, what: string, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

export interface DeliveryRow {
  id: string;
  request_id: string;
  forward_destination_id: string | null;
  status: string;
  attempt_count: number;
  next_attempt_at: Date;
  last_attempt_at: Date | null;
  last_status_code: number | null;
  last_error: string | null;
  url: string | null;
  replay_batch_id: string | null;
}

export async function deliveries(db: Db, where = 'true', params: unknown[] = []): Promise<DeliveryRow[]> {
  const { rows } = await db.query<DeliveryRow>(`select * from deliveries where ${where} order by id`, params);
  return rows;
}

export interface AttemptRow {
  delivery_id: string;
  attempt_number: number;
  node: string;
  started_at: Date;
  duration_ms: number;
  status_code: number | null;
  error_class: string | null;
  error_message: string | null;
  response_body: Buffer | null;
  response_body_truncated: boolean;
  response_headers: Array<[string, string]> | null;
}

export async function attempts(db: Db, deliveryId?: string): Promise<AttemptRow[]> {
  const { rows } = await db.query<AttemptRow>(
    `select * from delivery_attempts where ($1::uuid is null or delivery_id = $1::uuid) order by started_at, attempt_number`,
    [deliveryId ?? null],
  );
  return rows;
}

/** Waits until no delivery matching `where` is pending or in flight (or, with `settled`, in one of those statuses). */
export function waitForStatus(db: Db, statuses: string[], count: number, what = `${count} deliveries ${statuses.join('/')}`, timeoutMs?: number) {
  return waitUntil(
    async () => {
      const { rows } = await db.query<{ n: number }>(`select count(*)::int as n from deliveries where status = any($1::text[])`, [statuses]);
      return rows[0].n >= count ? rows[0].n : undefined;
    },
    what,
    timeoutMs,
  );
}

/** An organization and one endpoint of it. */
export async function orgWithEndpoint(db: Db, forwardUrl: string | null = null): Promise<EndpointFixture> {
  const org = await createOrganization(db, { name: 'Acme', plan: 'starter', region: 'us' });
  return insertEndpoint(db, org.id, { forwardUrl });
}
