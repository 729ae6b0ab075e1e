import { answer, arrayOf, bool, dataOf, errors, int, nullableInt, nullableStr, nullableTime, nullableUuid, object, oneOfStrings, pageOf, str, time, uuid } from '../http/responses.ts';
import { sampleEnvelopeSchema } from '../subscriptions/responses.ts';
import { EXAMPLE_INCIDENT } from '../subscriptions/samples.ts';
import { FAILURE_STATUSES } from './incidents.ts';
import { INCIDENT_STATUSES } from './store.ts';

const incidentProperties = {
  id: uuid,
  status: oneOfStrings(INCIDENT_STATUSES),
  scope: { type: 'string', description: 'What failed together: a destination, or a provider network (asn).' },
  destination_id: nullableUuid,
  destination_name: nullableStr,
  destination_url: nullableStr,
  asn: nullableInt,
  asn_org: nullableStr,
  asn_destination_count: int,
  likely_cause: str,
  failure_count: int,
  endpoint_count: int,
  first_failure_at: time,
  last_failure_at: time,
  is_recurring: bool,
  previous_incident_id: nullableUuid,
  investigating_at: nullableTime,
  resolved_at: nullableTime,
  resolved_by: nullableStr,
  created_at: time,
  updated_at: time,
};

/** An incident as presentIncident (store.ts) writes it. */
export const incidentSchema = object(incidentProperties, { example: EXAMPLE_INCIDENT });

export const updateSchema = object({ id: uuid, body: str, is_system: bool, author_id: str, created_at: time }, { description: 'A member note or a system update.' });

export const failureSchema = object({
  request_id: uuid,
  endpoint_id: uuid,
  destination_id: uuid,
  destination_url: str,
  status: {
    ...oneOfStrings(FAILURE_STATUSES),
    description:
      'retrying: its delivery waits for next_attempt_at; failed: no retry left; replaying / replay_failed: an incident replay took it; recovered: a retry or replay delivered it.',
  },
  next_attempt_at: { ...nullableTime, description: "The delivery's next retry while status is retrying, else null." },
  status_code: nullableInt,
  error: nullableStr,
  error_class: nullableStr,
  failed_at: { ...time, description: "The delivery's first failed attempt; status_code, error and error_class are its newest." },
  recovered_at: nullableTime,
  replayed_at: nullableTime,
  replay_status_code: nullableInt,
});

const detailSchema = object({
  ...incidentProperties,
  unreplayed_count: { type: 'integer', description: 'What POST .../replay would queue at most.' },
  latest_replay_batch_id: { ...nullableUuid, description: "The incident's newest replay batch (GET /v1/replay-batches/:id), or null." },
  failures: { ...arrayOf(failureSchema), description: 'The newest 100 failures, newest first.' },
  updates: { ...arrayOf(updateSchema), description: 'Newest first.' },
});

export const replayBatchSchema = object(
  {
    id: uuid,
    incident_id: nullableUuid,
    status: oneOfStrings(['running', 'paused', 'cancelled', 'finished']),
    requests_per_minute: int,
    queued_count: int,
    delivered_count: int,
    failed_count: int,
    remaining_count: int,
    paused_reason: nullableStr,
    created_at: time,
    finished_at: nullableTime,
    estimated_end_at: nullableTime,
  },
  {
    example: {
      id: '0193a8c2-0000-7000-8000-0000000000b1',
      incident_id: EXAMPLE_INCIDENT.id,
      status: 'running',
      requests_per_minute: 60,
      queued_count: 12,
      delivered_count: 5,
      failed_count: 0,
      remaining_count: 7,
      paused_reason: null,
      created_at: '2026-01-01T00:10:00.000Z',
      finished_at: null,
      estimated_end_at: '2026-01-01T00:17:00.000Z',
    },
  },
);

export const incidentResponses = {
  page: answer(200, 'A page of incidents with the given status, newest first.', pageOf(incidentSchema)),
  sample: answer(200, "What incident.opened delivers: the newest incident, or a documented example (`sample: true`).", dataOf(sampleEnvelopeSchema(incidentSchema))),
  recent: answer(200, 'The newest incidents of any status.', dataOf(arrayOf(incidentSchema))),
  detail: answer(200, 'The incident with its newest failures and its updates.', dataOf(detailSchema)),
  updated: answer(200, 'The incident with its new status.', dataOf(incidentSchema)),
  noted: answer(201, 'The note, as added to the incident.', dataOf(updateSchema)),
  replayed: answer(200, "Queued: the incident's unreplayed failures, paced.", dataOf(object({ replay_batch_id: uuid, queued_count: int, requests_per_minute: int }))),
  batch: answer(200, 'The replay batch and its progress.', dataOf(replayBatchSchema)),
  batchChanged: { ...answer(200, 'The replay batch in its new state.', dataOf(replayBatchSchema)), ...errors(409) },
};
