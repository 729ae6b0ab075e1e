import type { Queryable } from '../db/db.ts';
import { latestCapture } from '../requests/captures.ts';
import { presentCapture } from '../requests/present.ts';
import { EXAMPLE_CAPTURE } from '../requests/example.ts';
import type { EventType } from './event-types.ts';

/**
 * What a subscriber would receive, for integration builders (Zapier's and
 * Make's "sample" step): a real recent resource when there is one, else a
 * fixed, documented example. Shown with the envelope of a real event; the
 * id is `evt_sample` so it can never be mistaken for a delivered one.
 */
export function sampleEnvelope(type: EventType, data: unknown, real: boolean) {
  return { id: 'evt_sample', type, timestamp: new Date().toISOString(), sample: !real, data };
}

/** The documented capture sent when an endpoint has captured nothing yet (docs/subscriptions.md). */
export function exampleCapture(endpointId: string) {
  return { ...EXAMPLE_CAPTURE, endpoint_id: endpointId };
}

/** The request.captured payload for an endpoint's latest capture, or the example. */
export async function captureSample(db: Queryable, organizationId: string, endpointId: string) {
  const c = await latestCapture(db, organizationId, endpointId);
  return sampleEnvelope('request.captured', { object: c ? presentCapture(c) : exampleCapture(endpointId) }, c !== undefined);
}

/** The documented incident sent as incident.opened's sample when the organization has had none. */
export const EXAMPLE_INCIDENT = {
  id: '0190a3c2-6000-7000-8000-000000000001',
  status: 'open',
  scope: 'destination',
  destination_id: '0190a3c2-6000-7000-8000-000000000002',
  destination_name: 'Staging API',
  destination_url: 'https://staging.example.com/webhooks',
  asn: 16509,
  asn_org: 'AMAZON-02',
  asn_destination_count: 1,
  likely_cause: 'The destination answers HTTP 503 (service unavailable): it is down or overloaded.',
  failure_count: 12,
  endpoint_count: 1,
  first_failure_at: '2026-01-01T00:00:00.000Z',
  last_failure_at: '2026-01-01T00:05:00.000Z',
  is_recurring: false,
  previous_incident_id: null,
  investigating_at: null,
  resolved_at: null,
  resolved_by: null,
  created_at: '2026-01-01T00:00:01.000Z',
  updated_at: '2026-01-01T00:05:01.000Z',
};
