import type { Db, Queryable } from '../../src/db/db.ts';
import { correlateAll } from '../../src/incidents/correlate.ts';
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
