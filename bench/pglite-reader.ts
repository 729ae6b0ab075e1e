/**
 * The named statements' reader (src/db/pglite-results.ts) against PGlite's
 * own (its protocol Parser, then parseResults), on the same raw output: a
 * claim-sized result, 50 rows of the columns a claim returns, a 1 KiB body
 * as hex. Both alternate in one process; prints µs per row for each and the
 * ratio. `npx tsx bench/pglite-reader.ts` (BENCH_ROUNDS, default 5).
 */
import { parse, PGlite, protocol } from '@electric-sql/pglite';
import { bindAndExecute } from '../src/db/pglite.ts';
import { RawOutput, readResult } from '../src/db/pglite-results.ts';
import { median } from './stats.ts';

const pg = await PGlite.create();
const text = `select gen_random_uuid() as id, gen_random_uuid() as lease_id, 'in_flight' as status, gen_random_uuid() as organization_id,
  gen_random_uuid() as request_id, gen_random_uuid() as endpoint_id, gen_random_uuid() as forward_destination_id, 'https' as destination_type,
  'https://example.com/hook' as url, null::uuid as agent_id, 0 as attempt_count, null::float8 as paced_slot_ms, null::uuid as replay_batch_id,
  gen_random_uuid() as capture_id, 'POST' as method, '/stripe' as path, '' as query,
  '[["content-type","application/json"],["stripe-signature","t=1,v1=abc"],["user-agent","Stripe/1.0"]]'::jsonb as headers,
  encode(decode(repeat('7b22', 512), 'hex'), 'hex') as body_hex, 'verified' as verification_status, true as enabled, null::text as method_override,
  true as retry_enabled, array[60,300,1800]::int[] as retry_schedule, false as intelligent_retry, null::int as target_port, null::text as target_path,
  null::text as agent_environment, null::text as filter_version, false as ignore_filter, null::json as transformation,
  (extract(epoch from now()) * 1000)::float8 as request_received_ms, (extract(epoch from now()) * 1000)::float8 as db_now_ms
  from generate_series(1, 50)`;
await pg.execProtocol(Buffer.concat([protocol.serialize.parse({ name: 'claimish', text }), protocol.serialize.sync()]));
const raw = Buffer.from((await pg.execProtocolRaw(bindAndExecute('claimish', []), { syncToFs: false })).slice());

function theirs(): number {
  const messages: unknown[] = [];
  // PGlite's execProtocol also copies each chunk twice before this (a slice, then into its receive buffer): not counted here
  new protocol.Parser().parse(raw, (m) => messages.push(m));
  return parse.parseResults(messages as Parameters<typeof parse.parseResults>[0], pg.parsers)[0].rows.length;
}
function ours(): number {
  const out = new RawOutput();
  out.take(raw);
  return readResult(out.bytes(), pg.parsers, () => {}).rows.length;
}

const rounds = Number(process.env.BENCH_ROUNDS ?? 5);
const per = (fn: () => number) => {
  const start = process.hrtime.bigint();
  let rows = 0;
  for (let i = 0; i < 2000; i++) rows += fn();
  return Number(process.hrtime.bigint() - start) / 1000 / rows;
};
per(theirs);
per(ours);
const a: number[] = [];
const b: number[] = [];
for (let r = 0; r < rounds; r++) {
  a.push(per(theirs));
  b.push(per(ours));
}
console.log(`PGlite's reader: ${median(a).toFixed(2)} µs a row; ours: ${median(b).toFixed(2)} µs a row; ours ÷ theirs ${(median(b) / median(a)).toFixed(2)} (${raw.length} bytes, 50 rows)`);
await pg.close();
