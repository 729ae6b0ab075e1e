import type { Db, Queryable } from '../../src/db/db.ts';
import { correlateAll } from '../../src/incidents/correlate.ts';
import { PACING_LATE_MS } from '../../src/delivery/claim-statement.ts';
import { insertCaptures, insertEndpoint, insertForwardDestination, type EndpointFixture } from '../helpers/fixtures.ts';

export interface IncidentRecord {
  id: string;
  status: string;
  scope_key: string;
  destination_id: string | null;
  destination_name: string | null;
  asn: string | null;
  asn_org: string | null;
  asn_destination_count: number;
  likely_cause: string;
  failure_count: number;
  endpoint_count: number;
  is_recurring: boolean;
  previous_incident_id: string | null;
  resolved_at: Date | null;
  resolved_by: string | null;
}

export async function incidents(db: Queryable): Promise<IncidentRecord[]> {
  const { rows } = await db.query<IncidentRecord>(`select * from incidents order by id`);
  return rows;
}

export async function updates(db: Queryable, incidentId: string): Promise<Array<{ body: string; is_system: boolean; author_id: string }>> {
  const { rows } = await db.query<{ body: string; is_system: boolean; author_id: string }>(
    `select body, is_system, author_id from incident_updates where incident_id = $1::uuid order by id`,
    [incidentId],
  );
  return rows;
}

export async function failureRows(db: Queryable): Promise<Array<{ request_id: string; incident_id: string | null; status_code: number | null; error_class: string | null; recovered_at: Date | null; replayed_at: Date | null; replay_status_code: number | null; replay_delivery_id: string | null }>> {
  const { rows } = await db.query<any>(`select * from incident_failures order by id`);
  return rows;
}

export interface SeededIncident {
  incidentId: string;
  endpoint: EndpointFixture;
  destinationId: string;
  requestIds: string[];
}

/**
 * An incident of `n` failures, as the delivery engine and the correlator
 * make it, without a network: captures stored by the capture statement
 * (their deliveries marked failed, with a 503 attempt each, as a worker
 * would record them) and incident_failures rows as the completion
 * statement writes them, then the real correlator. For API tests that
 * need an incident in one step; the tests of the recording itself drive a
 * real worker against a real receiver (correlation.test.ts).
 */
export async function seedIncident(db: Db, organizationId: string, opts: { n?: number; url?: string; endpoint?: EndpointFixture } = {}): Promise<SeededIncident> {
  const endpoint = opts.endpoint ?? (await insertEndpoint(db, organizationId));
  const fd = await insertForwardDestination(db, endpoint, { url: opts.url ?? 'https://example.com/hook', retryEnabled: false });
  const captures = await insertCaptures(db, endpoint, Array.from({ length: opts.n ?? 3 }, (_, i) => ({ body: `{"i":${i}}` })));
  await db.query(
    `update deliveries set status = 'failed', attempt_count = 1, last_status_code = 503, last_attempt_at = now()
      where forward_destination_id = $1::uuid`,
    [fd.id],
  );
  await db.query(
    `insert into incident_failures (id, organization_id, delivery_id, request_id, request_received_at, endpoint_id, forward_destination_id,
                                    destination_type, scope_key, destination_url, status_code, error_class, error)
     select gen_random_uuid(), d.organization_id, d.id, d.request_id, d.request_received_at, d.endpoint_id, d.forward_destination_id,
            'https', 'fd:' || d.forward_destination_id::text, d.url, 503, 'http_status', 'HTTP 503; retries are disabled for this destination'
       from deliveries d where d.forward_destination_id = $1::uuid`,
    [fd.id],
  );
  await correlateAll(db);
  const { rows } = await db.query<{ id: string }>(`select id from incidents where scope_key = $1 order by id desc limit 1`, [`fd:${fd.id}`]);
  return { incidentId: rows[0].id, endpoint, destinationId: fd.id, requestIds: captures.map((c) => c.id) };
}

/**
 * Records every dispatch slot the claim statement gives a replay batch's
 * deliveries (deliveries.paced_slot is cleared once the attempt is
 * recorded, so the schedule is kept aside by a trigger), to check the
 * schedule Weir computed rather than when requests happened to arrive.
 * Works across processes sharing the database. Slots are in microseconds
 * since the epoch, exact.
 */
export async function recordPacedSlots(db: Queryable): Promise<{ slots(batchId: string): Promise<Array<{ delivery_id: string; slot_us: number }>>; stop(): Promise<void> }> {
  await db.query(`create table if not exists test_paced_slots (delivery_id uuid not null, replay_batch_id uuid, slot timestamptz not null, unique (delivery_id, slot))`);
  await db.query(`create or replace function test_record_paced_slot() returns trigger language plpgsql as $$
    begin
      insert into test_paced_slots values (new.id, new.replay_batch_id, new.paced_slot) on conflict do nothing;
      return null;
    end $$`);
  await db.query(`drop trigger if exists test_paced_slot on deliveries`);
  await db.query(`create trigger test_paced_slot after update of paced_slot on deliveries
    for each row when (new.paced_slot is not null and new.replay_batch_id is not null) execute function test_record_paced_slot()`);
  return {
    async slots(batchId) {
      const { rows } = await db.query<{ delivery_id: string; slot_us: string }>(
        `select delivery_id, (extract(epoch from slot) * 1000000)::bigint::text as slot_us from test_paced_slots where replay_batch_id = $1::uuid order by slot, delivery_id`,
        [batchId],
      );
      return rows.map((r) => ({ delivery_id: r.delivery_id, slot_us: Number(r.slot_us) }));
    },
    async stop() {
      await db.query(`drop trigger if exists test_paced_slot on deliveries`);
      await db.query(`drop table if exists test_paced_slots`);
    },
  };
}

/**
 * Checks a batch's recorded schedule: each delivery was given one slot, or
 * more only where every node missed the earlier one by more than
 * PACING_LATE_MS (a loaded machine) and it was given up for a later one;
 * and no two slots are closer than the batch's interval (the pacer's own
 * arithmetic, exact to the microsecond). Returns the slots in order.
 */
export function assertPacedSchedule(slots: Array<{ delivery_id: string; slot_us: number }>, deliveryIds: readonly string[], perMinute: number): number[] {
  const byDelivery = new Map<string, number[]>();
  for (const s of slots) byDelivery.set(s.delivery_id, [...(byDelivery.get(s.delivery_id) ?? []), s.slot_us]);
  if ([...byDelivery.keys()].sort().join() !== [...deliveryIds].sort().join()) throw new Error(`slots for ${byDelivery.size} deliveries, expected ${deliveryIds.length}`);
  for (const [id, s] of byDelivery) {
    const given = [...s].sort((a, b) => a - b);
    for (let i = 1; i < given.length; i++) {
      if (given[i] - given[i - 1] <= PACING_LATE_MS * 1000) throw new Error(`delivery ${id} was given ${given.length} slots, one not missed before the next`);
    }
  }
  const interval = 60_000_000 / perMinute;
  const sorted = slots.map((s) => s.slot_us).sort((a, b) => a - b);
  for (let i = 1; i < sorted.length; i++) {
    if (sorted[i] - sorted[i - 1] < interval) throw new Error(`slots ${i - 1} and ${i} are ${sorted[i] - sorted[i - 1]} µs apart, less than the interval of ${interval} µs`);
  }
  return sorted;
}
