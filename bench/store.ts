/**
 * Capture statement benchmark (npm run bench:store): what the capture
 * statement (src/ingest/store.ts storeCaptures: endpoint lock, capture rows,
 * forward targets, deliveries, NOTIFY) costs per capture, divided by the
 * least the database must do for the same rows: one INSERT ... SELECT of the
 * same parameters into captured_requests and nothing else. No HTTP, so the
 * database side of ingest can be compared between changes without the
 * noise of a load generator. Both run through the project's own Db
 * adapters as named statements, alternating in rounds on one database.
 *
 * PGlite in a temporary folder (as `npm start` uses it), and PostgreSQL in a
 * fresh database beside DATABASE_URL when that is set.
 * Env: BENCH_GROUPS (groups per round, default 300), BENCH_GROUP_SIZE
 * (captures per group, default 40), BENCH_ROUNDS (default 3).
 * BENCH_VERIFY=1 adds a third variant: the capture statement with every
 * capture marked as signature verification marks it (src/verification:
 * status `verified`), so what verification costs the statement is the
 * difference between the last two lines.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Db, Queryable } from '../src/db/db.ts';
import { migrate } from '../src/db/migrate.ts';
import { openPglite } from '../src/db/pglite.ts';
import { openPostgres } from '../src/db/postgres.ts';
import { createEndpoint } from '../src/endpoints/endpoints.ts';
import { storeCaptures } from '../src/ingest/store.ts';
import { createOrganization } from '../src/orgs/organizations.ts';
import { DEFAULT_PLANS } from '../src/orgs/plans.ts';
import type { Capture } from '../src/requests/captures.ts';
import { createFreshDatabase } from '../test/helpers/db.ts';
import { captureOf } from '../test/helpers/fixtures.ts';
import { median } from './stats.ts';

const GROUPS = Number(process.env.BENCH_GROUPS ?? 300);
const SIZE = Number(process.env.BENCH_GROUP_SIZE ?? 40);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

// The baseline: the same parameters, only the capture rows.
const PLAIN_INSERT = `
insert into captured_requests
  (id, organization_id, endpoint_id, received_at, method, path, query, headers, body, body_size, content_type, source_ip)
select u.id, u.organization_id, u.endpoint_id, u.received_at, u.r->>0, u.r->>1, u.r->>2, u.r->3,
       substring($9::bytea from u.off + 1 for u.len), u.len, u.r->>4, u.r->>5
  from rows from (unnest($1::uuid[]), unnest($2::uuid[]), unnest($3::uuid[]), unnest($4::timestamptz[]),
                  unnest($5::int[]), unnest($6::int[]), jsonb_array_elements($7::jsonb))
         as u(id, organization_id, endpoint_id, received_at, off, len, r)
 where cardinality($8::uuid[]) > 0`;

const body = Buffer.from(JSON.stringify({ id: 'evt_1', type: 'invoice.paid', pad: 'x'.repeat(990) }));
const headers: [string, string][] = [
  ['Host', '127.0.0.1:3000'],
  ['Connection', 'keep-alive'],
  ['Content-Type', 'application/json'],
  ['Content-Length', String(body.length)],
  ['User-Agent', 'bench'],
];

const VERIFY = process.env.BENCH_VERIFY === '1';

const group = (endpoint: { id: string; organization_id: string }, verified = false): Capture[] =>
  Array.from({ length: SIZE }, () => captureOf(endpoint, { body, headers, ...(verified ? { verification_status: 'verified' as const } : {}) }));

/**
 * Runs storeCaptures' own parameter building, then sends those parameters
 * with the plain INSERT instead, answering as the capture statement would
 * (every endpoint of the group live, $8, so storeCaptures asks nothing more).
 */
function plainInsert(db: Db): (captures: Capture[]) => Promise<unknown> {
  return (captures) => {
    const endpoints = [...new Set(captures.map((c) => c.endpoint_id))];
    const sendPlain: Queryable = {
      async query<R>(_text: string, params?: unknown[]) {
        // the capture rows' parameters ($1-$9); the rest are the hand-off's
        await db.query(PLAIN_INSERT, params!.slice(0, 9), { name: 'bench_plain_insert' });
        return { rows: endpoints.map((id) => ({ id, paused: false })) as R[], rowCount: endpoints.length };
      },
      exec: (sql) => db.exec(sql),
    };
    return storeCaptures(sendPlain, captures);
  };
}

async function measure(db: Db, label: string): Promise<void> {
  const org = await createOrganization(db, { name: 'bench', plan: 'business', region: 'us' });
  const created = await createEndpoint(db, DEFAULT_PLANS, org.id, { name: 'bench', createdBy: null });
  if (!created.ok) throw new Error('could not create the bench endpoint');
  const endpoint = created.endpoint;
  const capture = (c: Capture[]) => storeCaptures(db, c);
  // each variant: its name, what stores a group, and whether its captures are marked verified
  const variants: Array<[string, (c: Capture[]) => Promise<unknown>, boolean]> = [
    ['plain insert', plainInsert(db), false],
    ['capture statement', capture, false],
    ...(VERIFY ? [['capture statement, verified', capture, true] as [string, typeof capture, boolean]] : []),
  ];
  const perCapture = new Map<string, number[]>(variants.map(([name]) => [name, []]));
  for (const [, run, verified] of variants) for (let i = 0; i < 20; i++) await run(group(endpoint, verified));
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, run, verified] of variants) {
      const groups = Array.from({ length: GROUPS }, () => group(endpoint, verified));
      const t0 = performance.now();
      for (const g of groups) await run(g);
      perCapture.get(name)!.push(((performance.now() - t0) * 1000) / (GROUPS * SIZE));
    }
  }
  const plain = median(perCapture.get('plain insert')!);
  const full = median(perCapture.get('capture statement')!);
  console.log(
    `${label.padEnd(11)} plain insert ${plain.toFixed(1)} µs/capture, capture statement ${full.toFixed(1)} µs/capture ` +
      `(${(1000 / full).toFixed(0)}k captures/s on one connection), ratio ${(full / plain).toFixed(2)}`,
  );
  if (VERIFY) {
    const runs = perCapture.get('capture statement, verified')!;
    const unverified = perCapture.get('capture statement')!;
    const v = median(runs);
    const paired = median(runs.map((x, i) => x / unverified[i]));
    console.log(`${''.padEnd(11)} capture statement, verified ${v.toFixed(1)} µs/capture: verified ÷ unverified ${paired.toFixed(3)} (median of the rounds)`);
  }
}

/** Migrates a fresh database, measures on it, and closes it whatever happens. */
async function on(label: string, open: () => Promise<Db>): Promise<void> {
  const db = await open();
  try {
    await migrate(db);
    await measure(db, label);
  } finally {
    await db.close();
  }
}

console.log(`store bench: ${ROUNDS} rounds of ${GROUPS} groups of ${SIZE} captures (1 KiB JSON bodies), median per capture`);
const dir = mkdtempSync(join(tmpdir(), 'weir-store-bench-'));
try {
  await on('PGlite', () => openPglite(dir));
} finally {
  rmSync(dir, { recursive: true, force: true });
}
if (process.env.DATABASE_URL) {
  const fresh = await createFreshDatabase();
  try {
    await on('PostgreSQL', () => openPostgres(fresh.url, { poolSize: 2 }));
  } finally {
    await fresh.drop();
  }
}
