import { answer, bool, dataOf, int, noContent, nullableInt, nullableStr, nullableTime, nullableUuid, object, oneOfStrings, pageOf, str, time, uuid, type JsonSchema } from '../http/responses.ts';
import { captureSchema } from '../requests/schemas.ts';
import { EVENT_TYPES } from './event-types.ts';

const subscriptionProperties = {
  id: uuid,
  target_url: str,
  event_types: { type: 'array', items: oneOfStrings(EVENT_TYPES) },
  endpoint_id: { ...nullableUuid, description: 'Only events of this endpoint; null for every endpoint.' },
  status: oneOfStrings(['active', 'failing', 'unsubscribed']),
  status_reason: nullableStr,
  consecutive_failures: int,
  failing_since: nullableTime,
  last_success_at: nullableTime,
  last_failure_at: nullableTime,
  previous_secret_expires_at: { ...nullableTime, description: 'While the secret before the last rotation still signs.' },
  created_by: nullableUuid,
  created_at: time,
  updated_at: time,
};

const example = {
  id: '0193a8c2-0000-7000-8000-0000000000a1',
  target_url: 'https://hooks.zapier.com/hooks/standard/123/abc',
  event_types: ['request.captured'],
  endpoint_id: null,
  status: 'active',
  status_reason: null,
  consecutive_failures: 0,
  failing_since: null,
  last_success_at: '2026-01-01T00:05:00.000Z',
  last_failure_at: null,
  previous_secret_expires_at: null,
  created_by: '0193a8c2-0000-7000-8000-000000000002',
  created_at: '2026-01-01T00:00:00.000Z',
  updated_at: '2026-01-01T00:00:00.000Z',
};

export const subscriptionSchema = object(subscriptionProperties, { example });
const withSecret = object(
  { ...subscriptionProperties, secret: { type: 'string', description: 'The `whsec_` signing secret. Shown only in this answer.' } },
  { example: { ...example, secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' } },
);

const eventSchema = object({
  id: uuid,
  webhook_id: { type: 'string', description: 'The `webhook-id` header of the delivery: `evt_{id}`.' },
  type: oneOfStrings(EVENT_TYPES),
  status: str,
  attempt_count: int,
  next_attempt_at: nullableTime,
  last_status_code: nullableInt,
  last_error: nullableStr,
  last_attempt_at: nullableTime,
  created_at: time,
});

/** The envelope of an event as a subscriber receives it, with `object` of the given schema (src/subscriptions/samples.ts). */
export const sampleEnvelopeSchema = (object_: JsonSchema): JsonSchema =>
  object({
    id: { type: 'string', description: 'Always `evt_sample`.' },
    type: oneOfStrings(EVENT_TYPES),
    timestamp: time,
    sample: { ...bool, description: 'True when `object` is the documented example, not a real resource.' },
    data: object({ object: object_ }),
  });

export const subscriptionResponses = {
  created: answer(201, 'The new subscription, with its secret shown this once.', dataOf(withSecret)),
  page: answer(200, 'A page of subscriptions, newest first.', pageOf(subscriptionSchema)),
  sample: answer(200, "What request.captured delivers: the endpoint's newest capture, or a documented example (`sample: true`).", dataOf(sampleEnvelopeSchema(captureSchema))),
  one: answer(200, 'The subscription.', dataOf(subscriptionSchema)),
  events: answer(200, 'A page of the events sent to the subscription, newest first.', pageOf(eventSchema)),
  deleted: noContent('Deleted: no more events are sent.'),
  rotated: answer(200, 'The subscription with a new secret; the previous one keeps signing for 24 hours.', dataOf(withSecret)),
};
