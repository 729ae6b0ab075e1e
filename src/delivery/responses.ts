import { answer, arrayOf, bool, dataOf, int, nullableInt, nullableStr, nullableTime, nullableUuid, num, object, oneOfStrings, pageOf, str, time, uuid } from '../http/responses.ts';

const attemptSchema = object({
  id: uuid,
  attempt_number: int,
  started_at: time,
  duration_ms: num,
  url: nullableStr,
  status_code: nullableInt,
  error_class: { type: ['string', 'null'], description: 'Why the attempt failed without an answer: timeout, connection_refused, dns, tls, ...' },
  error_message: nullableStr,
  response_headers: { type: ['array', 'null'], items: { type: 'array', items: str, minItems: 2, maxItems: 2 }, description: '[name, value] pairs in arrival order.' },
  response_body: { type: ['string', 'null'], description: 'UTF-8 text, or base64 when the bytes are not valid UTF-8 (response_body_encoding).' },
  response_body_encoding: oneOfStrings(['utf8', 'base64'], true),
  response_body_truncated: bool,
  transformation_hash: { type: ['string', 'null'], description: "sha256 of the destination's transformation code this attempt ran (docs/transformations.md); null: none ran." },
  scheduled_at: {
    ...nullableTime,
    description: "The dispatch slot this attempt waited for under the destination's rate limit or a paced replay (docs/forwarding.md); null: it was not paced.",
  },
});

/** One delivery of a captured request (the fan-out or a replay) with every attempt (src/delivery/forwards.ts). */
export const forwardSchema = object({
  id: uuid,
  request_id: uuid,
  endpoint_id: uuid,
  destination_id: { ...nullableUuid, description: "Null for the endpoint's forward_url." },
  destination_name: nullableStr,
  destination_type: oneOfStrings(['https', 'agent']),
  url: nullableStr,
  agent_id: nullableUuid,
  webhook_id: { type: 'string', description: 'The stable `webhook-id` every attempt carries, for receivers to drop duplicates.' },
  status: {
    ...oneOfStrings(['pending', 'in_flight', 'succeeded', 'failed', 'dead', 'superseded', 'filtered', 'skipped']),
    description:
      "superseded: a later replay delivered this request to this destination, so this delivery ended without being sent again (docs/forwarding.md). filtered: the request did not match the destination's filter and was not sent (filter_reason says why; docs/routing.md). skipped: the transformation returned null, so nothing was sent (last_error says so; docs/transformations.md).",
  },
  attempt_count: int,
  next_attempt_at: nullableTime,
  last_status_code: nullableInt,
  last_error: nullableStr,
  filter_reason: { ...nullableStr, description: 'With status filtered: the first rule of the filter that failed, e.g. `body.type: expected $startsWith "invoice." got "charge.succeeded"`.' },
  replay_batch_id: nullableUuid,
  created_at: time,
  updated_at: time,
  attempts: arrayOf(attemptSchema),
});

const replaySchema = object(
  {
    replay_batch_id: uuid,
    request_id: uuid,
    queued_count: int,
    deliveries: arrayOf(object({ id: uuid, destination_id: nullableUuid, destination_type: oneOfStrings(['https', 'agent']), url: nullableStr, status: oneOfStrings(['pending']) })),
  },
  {
    example: {
      replay_batch_id: '0193a8c2-0000-7000-8000-0000000000b1',
      request_id: '0193a8c2-0000-7000-8000-0000000000c1',
      queued_count: 1,
      deliveries: [{ id: '0193a8c2-0000-7000-8000-0000000000e1', destination_id: '0193a8c2-0000-7000-8000-0000000000f1', destination_type: 'https', url: 'https://staging.example.com/webhooks', status: 'pending' }],
    },
  },
);

export const deliveryResponses = {
  replayed: answer(202, 'Queued: one new delivery per destination, sent by the queue.', dataOf(replaySchema)),
  forwards: answer(200, 'A page of the deliveries of the request, newest first, each with its attempts.', pageOf(forwardSchema)),
};
