import { EXAMPLE_VERIFICATION_VIEW, verificationView } from '../verification/schemas.ts';
import { deduplicationSetting } from '../routing/schemas.ts';
import { answer, arrayOf, dataOf, noContent, nullableStr, nullableUuid, object, str, time, uuid, bool, errors } from '../http/responses.ts';

/** The Endpoint resource as presentEndpoint (routes.ts) writes it. */
export const endpointSchema = object(
  {
    id: uuid,
    organization_id: uuid,
    created_by: nullableUuid,
    slug: str,
    name: str,
    description: nullableStr,
    forward_url: nullableStr,
    paused: bool,
    response: {
      type: ['object', 'null'],
      description: 'The custom ingest answer, or null for the default 200 `{"request_id": ...}`.',
      properties: {
        status: { type: 'integer' },
        headers: { type: 'object', additionalProperties: { type: 'string' } },
        body: { type: 'string' },
      },
      required: ['status', 'headers', 'body'],
    },
    verification: verificationView,
    deduplication: deduplicationSetting,
    created_at: time,
    updated_at: time,
    ingest_url: { type: 'string', description: 'Where senders post: `{ingest_url}/h/{slug}`.' },
  },
  {
    example: {
      id: '0193a8c2-4e1f-7a3b-9c2d-5e6f7a8b9c0d',
      organization_id: '0193a8c2-0000-7000-8000-000000000001',
      created_by: '0193a8c2-0000-7000-8000-000000000002',
      slug: 'k3x9q2m7',
      name: 'Stripe production',
      description: null,
      forward_url: 'https://staging.example.com/webhooks/stripe',
      paused: false,
      response: null,
      verification: EXAMPLE_VERIFICATION_VIEW,
      deduplication: null,
      created_at: '2026-01-01T00:00:00.000Z',
      updated_at: '2026-01-01T00:00:00.000Z',
      ingest_url: 'https://hooks.example.com/h/k3x9q2m7',
    },
  },
);

export const endpointResponses = {
  list: answer(200, "The organization's endpoints, all of them, newest first.", dataOf(arrayOf(endpointSchema))),
  created: { ...answer(201, 'The new endpoint.', dataOf(endpointSchema)), ...errors(429) },
  one: answer(200, 'The endpoint.', dataOf(endpointSchema)),
  updated: answer(200, 'The endpoint as changed.', dataOf(endpointSchema)),
  deleted: noContent('Deleted, with its captures and forward destinations.'),
};
