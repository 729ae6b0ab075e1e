/**
 * Response schemas of the captured-requests routes: they document the
 * answers in the OpenAPI document and let Fastify serialise them with a
 * compiled serialiser instead of JSON.stringify. A field the presenter
 * (present.ts) adds must be added here too, or it is dropped from the answer:
 * test/http/openapi-answers.test.ts compares every answer with JSON.stringify's.
 */
import { CAPTURE_DELIVERY_STATES } from '../delivery/summary.ts';
import { EXAMPLE_CAPTURE } from './example.ts';
import { captureVerification } from '../verification/schemas.ts';

const nullableString = { type: ['string', 'null'] } as const;

/** Where the capture's forwarding stands (src/delivery/summary.ts); on the list and one capture, not on live-tail or event payloads. */
const deliverySummarySchema = {
  type: 'object',
  additionalProperties: false,
  required: ['status', 'destinations', 'delivered', 'retrying', 'pending', 'failed'],
  description:
    "Where the capture's forwarding stands: delivered (every destination), retrying, pending (not tried yet), failed (some destination has no retry left), no_destinations, or filtered (every destination's filter left it out, docs/routing.md); with how many destinations are in each state (a filtered destination counts only in destinations).",
  properties: {
    status: { type: 'string', enum: [...CAPTURE_DELIVERY_STATES] },
    destinations: { type: 'integer' },
    delivered: { type: 'integer' },
    retrying: { type: 'integer' },
    pending: { type: 'integer' },
    failed: { type: 'integer' },
  },
} as const;

export const captureSummarySchema = {
  type: 'object',
  additionalProperties: false,
  required: ['id', 'endpoint_id', 'received_at', 'method', 'path', 'query', 'headers', 'content_type', 'body_size', 'source_ip', 'verification', 'rejected', 'duplicate_of'],
  properties: {
    id: { type: 'string', format: 'uuid' },
    endpoint_id: { type: 'string', format: 'uuid' },
    received_at: { type: 'string', format: 'date-time' },
    method: { type: 'string' },
    path: { type: 'string', description: 'After /h/{slug}, exactly as sent.' },
    query: { type: 'string', description: 'The raw query string without "?".' },
    headers: {
      type: 'array',
      description: 'In arrival order, original case, duplicates kept.',
      items: { type: 'object', additionalProperties: false, required: ['name', 'value'], properties: { name: { type: 'string' }, value: { type: 'string' } } },
    },
    content_type: nullableString,
    body_size: { type: 'integer' },
    source_ip: nullableString,
    verification: captureVerification,
    rejected: {
      type: 'boolean',
      description: "true when the endpoint's enforced verification refused it: the sender got 401, and it was stored but not forwarded or announced.",
    },
    duplicate_of: {
      type: ['string', 'null'],
      format: 'uuid',
      description: "The endpoint's deduplication found this capture's key on an earlier capture within the window: that capture's id. A duplicate is stored and acknowledged but not forwarded (docs/routing.md).",
    },
    delivery: deliverySummarySchema,
  },
} as const;

export const captureSchema = {
  ...captureSummarySchema,
  required: [...captureSummarySchema.required, 'body', 'body_encoding'],
  properties: {
    ...captureSummarySchema.properties,
    body: { type: 'string', description: 'UTF-8 text, or base64 when the bytes are not valid UTF-8.' },
    body_encoding: { type: 'string', enum: ['utf8', 'base64'] },
  },
  example: EXAMPLE_CAPTURE,
} as const;

const pageMeta = {
  type: 'object',
  additionalProperties: false,
  required: ['count', 'has_more', 'next_cursor'],
  properties: { count: { type: 'integer' }, has_more: { type: 'boolean' }, next_cursor: { type: ['string', 'null'] } },
} as const;

export const capturePageResponse = {
  200: {
    description: "A page of the endpoint's captures, newest first, without bodies (GET /v1/requests/:id has the body).",
    type: 'object',
    additionalProperties: false,
    required: ['data'],
    properties: {
      data: { type: 'object', additionalProperties: false, required: ['data', 'meta'], properties: { data: { type: 'array', items: captureSummarySchema }, meta: pageMeta } },
    },
  },
} as const;

export const captureResponse = {
  200: { description: 'The capture with its body.', type: 'object', additionalProperties: false, required: ['data'], properties: { data: captureSchema } },
} as const;

/** GET /v1/requests/:id/body: the captured bytes themselves, not JSON. */
export const captureBodyResponse = {
  200: {
    description: "The captured body's exact bytes, with the content-type it arrived with (application/octet-stream when it had none).",
    content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } },
  },
} as const;

/** GET /v1/endpoints/:id/requests/stream: Server-Sent Events (docs/capture.md "Live tail"). */
export const tailStreamResponse = {
  200: {
    description:
      'Server-Sent Events, sent once the stream is subscribed: one `request` event per capture (`id` is the capture id, `data` its summary as in the list), comments as heartbeats, a final `overflow` event (with the `last_event_id` to resume from) before a client too slow to keep up is disconnected, and a final `closed` event when the key, its role or scopes, or the endpoint no longer allow the stream. Reconnect with `Last-Event-ID` to resume after `overflow` or a dropped connection; not after `closed`.',
    content: { 'text/event-stream': { schema: { type: 'string' } } },
  },
} as const;
