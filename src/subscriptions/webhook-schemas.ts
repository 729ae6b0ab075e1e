import { failureSchema, incidentSchema, replayBatchSchema, updateSchema } from '../incidents/responses.ts';
import { object, oneOfStrings, str, time, uuid, type JsonSchema } from '../http/responses.ts';
import { EXAMPLE_CAPTURE } from '../requests/example.ts';
import { captureSchema } from '../requests/schemas.ts';
import { EVENT_TYPES, type EventType } from './event-types.ts';
import { EXAMPLE_INCIDENT } from './samples.ts';

/**
 * What each event type delivers, as the OpenAPI document's `webhooks`
 * (src/http/openapi.ts): the envelope of eventBody() (event-types.ts) around
 * a `data` built from the same schemas the API's answers use, so an event's
 * object and the route that returns the same resource cannot disagree.
 * test/subscriptions/webhook-schemas.test.ts delivers every type to a real
 * receiver and validates what arrives against these.
 */

const forwardFailure = object(
  {
    ...(failureSchema.properties as Record<string, JsonSchema>),
    delivery_id: uuid,
    destination_type: oneOfStrings(['https', 'agent']),
    incident_id: uuid,
  },
  { description: 'The failure as the incident detail lists it, with its delivery, destination type and incident.' },
);

const FINISHED_BATCH_EXAMPLE = {
  ...(replayBatchSchema.example as object),
  status: 'finished',
  delivered_count: 12,
  remaining_count: 0,
  finished_at: '2026-01-01T00:22:00.000Z',
  estimated_end_at: null,
};
const finishedBatch = {
  ...replayBatchSchema,
  properties: { ...(replayBatchSchema.properties as object), status: { type: 'string', const: 'finished' }, finished_at: time },
  example: FINISHED_BATCH_EXAMPLE,
};

const UPDATED: JsonSchema = {
  description: 'What changed: a status (not to resolved), the likely cause, or a note.',
  oneOf: [
    object({ object: incidentSchema, change: { type: 'string', const: 'status' }, previous: object({ status: str }) }),
    object({ object: incidentSchema, change: { type: 'string', const: 'cause' }, previous: object({ likely_cause: str }) }),
    object({ object: incidentSchema, change: { type: 'string', const: 'note' }, update: updateSchema }),
  ],
};

const DATA: Record<EventType, { summary: string; data: JsonSchema; example: unknown }> = {
  'request.captured': {
    summary: 'A request was captured on an endpoint',
    data: object({ object: captureSchema }),
    example: { object: EXAMPLE_CAPTURE },
  },
  'request.forward_failed': {
    summary: "A delivery's first failed attempt (`status` says whether a retry is left), once per failure episode",
    data: object({ object: forwardFailure }),
    example: {
      object: {
        request_id: EXAMPLE_CAPTURE.id,
        endpoint_id: EXAMPLE_CAPTURE.endpoint_id,
        destination_id: EXAMPLE_INCIDENT.destination_id,
        destination_url: EXAMPLE_INCIDENT.destination_url,
        status: 'retrying',
        next_attempt_at: '2026-01-01T00:05:30.000Z',
        status_code: 503,
        error: null,
        error_class: 'http_5xx',
        failed_at: '2026-01-01T00:05:00.000Z',
        recovered_at: null,
        replayed_at: null,
        replay_status_code: null,
        delivery_id: '0193a8c2-0000-7000-8000-0000000000d1',
        destination_type: 'https',
        incident_id: EXAMPLE_INCIDENT.id,
      },
    },
  },
  'incident.opened': { summary: 'An incident opened (or recurred)', data: object({ object: incidentSchema }), example: { object: EXAMPLE_INCIDENT } },
  'incident.updated': {
    summary: "An incident's status or likely cause changed, or a note was added",
    data: UPDATED,
    example: { object: { ...EXAMPLE_INCIDENT, status: 'investigating', investigating_at: '2026-01-01T00:06:00.000Z' }, change: 'status', previous: { status: 'open' } },
  },
  'incident.resolved': {
    summary: 'An incident was resolved, by a member or automatically',
    data: object({ object: incidentSchema, previous: object({ status: str }) }),
    example: { object: { ...EXAMPLE_INCIDENT, status: 'resolved', resolved_at: '2026-01-01T00:20:00.000Z', resolved_by: '00000000-0000-0000-0000-000000000000' }, previous: { status: 'open' } },
  },
  'replay.completed': {
    summary: 'An incident replay batch finished',
    data: object({ object: finishedBatch }),
    example: { object: FINISHED_BATCH_EXAMPLE },
  },
};

/** The body of an event of `type`: `{id, type, timestamp, data}`. */
export function eventPayloadSchema(type: EventType): JsonSchema {
  return object(
    {
      id: { type: 'string', pattern: '^evt_[0-9a-f-]{36}$', description: 'The event id, also the `webhook-id` header: the same on every retry.' },
      type: { type: 'string', const: type },
      timestamp: { ...time, description: 'When the event was produced.' },
      data: DATA[type].data,
    },
    { description: `The body of a \`${type}\` event.` },
  );
}

const header = (name: string, description: string, example: string) => ({ name, in: 'header', required: true, description, schema: { type: 'string' }, example });

/** The Standard Webhooks headers every event carries (src/subscriptions/signing.ts). */
const HEADERS = [
  header('webhook-id', '`evt_<uuid>`, the same on every retry: drop duplicates by it.', 'evt_0193a8c2-0000-7000-8000-0000000000e1'),
  header('webhook-timestamp', 'Unix seconds of this attempt; reject events much older than now.', '1767225900'),
  header(
    'webhook-signature',
    '`v1,<base64 HMAC-SHA256>` per signing secret, space-separated (two during a rotation), over `{webhook-id}.{webhook-timestamp}.{body}` keyed with the base64-decoded secret after `whsec_`.',
    'v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=',
  ),
  header('x-weir-request-id', "The event's uuid (every request Weir sends carries this header).", '0193a8c2-0000-7000-8000-0000000000e1'),
];

const operationId = (type: EventType) => type.replace(/(^|[._])(\w)/g, (_m, sep: string, c: string) => (sep ? c.toUpperCase() : c)) + 'Event';

/** The OpenAPI 3.1 `webhooks` object: one POST per event type. */
export function webhooksObject(): Record<string, unknown> {
  return Object.fromEntries(
    EVENT_TYPES.map((type) => [
      type,
      {
        post: {
          operationId: operationId(type),
          summary: DATA[type].summary,
          description: `Sent to every subscription whose \`event_types\` include \`${type}\`. Verify the signature with any Standard Webhooks library before trusting the body.`,
          tags: ['events'],
          security: [],
          parameters: HEADERS,
          requestBody: {
            required: true,
            content: {
              'application/json': {
                schema: eventPayloadSchema(type),
                example: { id: 'evt_0193a8c2-0000-7000-8000-0000000000e1', type, timestamp: '2026-01-01T00:05:00.000Z', data: DATA[type].example },
              },
            },
          },
          responses: {
            '200': { description: 'Any 2xx: received. The body of the answer is ignored.' },
            '410': { description: 'Gone: Weir unsubscribes the subscription and sends it nothing more.' },
            default: { description: 'Any other answer or a timeout: retried with backoff, then the event is marked dead.' },
          },
        },
      },
    ]),
  );
}
