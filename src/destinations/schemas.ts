import {
  answer,
  arrayOf,
  bool,
  dataOf,
  errors,
  int,
  listOf,
  noContent,
  nullableInt,
  nullableStr,
  nullableUuid,
  object,
  oneOfStrings,
  pageOf,
  str,
  time,
  uuid,
} from '../http/responses.ts';
import { uuidSchema } from '../http/schemas.ts';
import { VISIBILITIES } from './rules.ts';
import { filterSetting } from '../routing/schemas.ts';

/**
 * Request body schemas. They check types and refuse unknown fields; the
 * rules that depend on the flow (which fields an agent destination needs,
 * ranges, URL form) are the domain's, so that the agent flow can answer
 * missing_field and every rule lives in one place.
 */
const settingsProperties = {
  method_override: { type: ['string', 'null'] },
  retry_enabled: { type: 'boolean' },
  retry_schedule: { type: 'array', items: { type: 'integer' } },
  intelligent_retry: { type: 'boolean' },
  rate_limit_enabled: { type: 'boolean' },
  rate_limit_per_minute: { type: ['integer', 'null'] },
  filter: filterSetting,
  // checked to compile by the route (src/transformations/check.ts)
  transformation: { type: ['object', 'null'], additionalProperties: false, required: ['code'], properties: { code: { type: 'string' } } },
} as const;

export const createBodySchema = {
  type: 'object',
  additionalProperties: false,
  required: ['name'],
  properties: {
    name: { type: 'string' },
    destination_type: { type: 'string', enum: ['https', 'agent'] },
    url: { type: 'string' },
    endpoint_id: uuidSchema,
    visibility: { type: 'string', enum: VISIBILITIES },
    is_reusable: { type: 'boolean' },
    agent_id: uuidSchema,
    target_port: { type: 'integer' },
    target_path: { type: 'string' },
    environment_override: { type: ['string', 'null'] },
    ...settingsProperties,
  },
} as const;

export const savedPatchSchema = {
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: {
    name: { type: 'string' },
    url: { type: 'string' },
    visibility: { type: 'string', enum: VISIBILITIES },
    is_reusable: { type: 'boolean' },
  },
} as const;

export const forwardPatchSchema = {
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: {
    name: { type: 'string' },
    enabled: { type: 'boolean' },
    sort_order: { type: 'integer' },
    environment_override: { type: ['string', 'null'] },
    target_port: { type: 'integer' },
    target_path: { type: 'string' },
    ...settingsProperties,
  },
} as const;

export const attachBodySchema = {
  type: 'object',
  additionalProperties: false,
  required: ['destination_id'],
  properties: {
    destination_id: uuidSchema,
    name: { type: 'string' },
    ...settingsProperties,
  },
} as const;

export const endpointDestinationParams = {
  type: 'object',
  properties: { id: { type: 'string' }, destination_id: { type: 'string' } },
  required: ['id', 'destination_id'],
} as const;

// Response schemas: what presentSaved and presentForward (present.ts) write.
// A field a presenter adds must be added here too, or the serialiser drops
// it: test/http/openapi.test.ts compares every answer with JSON.stringify's.

const savedProperties = {
  id: uuid,
  name: str,
  url: str,
  visibility: oneOfStrings(VISIBILITIES),
  is_reusable: bool,
  created_by: nullableUuid,
  created_at: time,
  updated_at: time,
};

const savedExample = {
  id: '0193a8c2-0000-7000-8000-0000000000d1',
  name: 'Staging API',
  url: 'https://staging.example.com/webhooks',
  visibility: 'org',
  is_reusable: true,
  created_by: '0193a8c2-0000-7000-8000-000000000002',
  created_at: '2026-01-01T00:00:00.000Z',
  updated_at: '2026-01-01T00:00:00.000Z',
};

export const savedDestinationSchema = object(savedProperties, { example: savedExample });

const savedWithEndpointsSchema = object(
  {
    ...savedProperties,
    endpoints: arrayOf(object({ endpoint_id: uuid, endpoint_name: str, forward_destination_id: uuid }, { description: 'An endpoint this destination is attached to.' })),
  },
  { example: { ...savedExample, endpoints: [{ endpoint_id: '0193a8c2-4e1f-7a3b-9c2d-5e6f7a8b9c0d', endpoint_name: 'Stripe production', forward_destination_id: '0193a8c2-0000-7000-8000-0000000000f1' }] } },
);

export const forwardDestinationSchema = object(
  {
    id: uuid,
    endpoint_id: uuid,
    name: str,
    destination_type: oneOfStrings(['https', 'agent']),
    url: { type: ['string', 'null'], description: 'HTTPS destinations only.' },
    agent_id: nullableUuid,
    target_port: nullableInt,
    target_path: nullableStr,
    enabled: bool,
    method_override: nullableStr,
    environment_override: oneOfStrings(['development'], true),
    sort_order: int,
    saved_destination_id: nullableUuid,
    retry_enabled: { type: ['boolean', 'null'], description: 'Null on agent destinations: agents retry by environment.' },
    retry_schedule: { type: ['array', 'null'], items: int, description: 'Delays in seconds; null on agent destinations.' },
    intelligent_retry: { type: ['boolean', 'null'] },
    rate_limit_enabled: bool,
    rate_limit_per_minute: nullableInt,
    filter: filterSetting,
    transformation: {
      type: ['object', 'null'],
      additionalProperties: false,
      required: ['code', 'hash'],
      properties: { code: str, hash: { type: 'string', description: 'sha256 of the code: the version each attempt records (transformation_hash).' } },
      description: 'JavaScript defining function handler(request, context), run on each request before it is sent (docs/transformations.md); null: forward what arrived.',
    },
    created_at: time,
    updated_at: time,
  },
  {
    example: {
      id: '0193a8c2-0000-7000-8000-0000000000f1',
      endpoint_id: '0193a8c2-4e1f-7a3b-9c2d-5e6f7a8b9c0d',
      name: 'Staging API',
      destination_type: 'https',
      url: 'https://staging.example.com/webhooks',
      agent_id: null,
      target_port: null,
      target_path: null,
      enabled: true,
      method_override: null,
      environment_override: null,
      sort_order: 0,
      saved_destination_id: '0193a8c2-0000-7000-8000-0000000000d1',
      retry_enabled: true,
      retry_schedule: [60, 300, 1800],
      intelligent_retry: false,
      rate_limit_enabled: false,
      rate_limit_per_minute: null,
      filter: null,
      transformation: null,
      created_at: '2026-01-01T00:00:00.000Z',
      updated_at: '2026-01-01T00:00:00.000Z',
    },
  },
);

const createdSchema = object(
  {
    data: {
      anyOf: [
        { ...forwardDestinationSchema, description: 'An agent destination: the forward destination made on the endpoint.' },
        object(
          { ...savedProperties, forward_destination_id: { ...uuid, description: 'When endpoint_id was given and the attachment succeeded.' } },
          { optional: ['forward_destination_id'], description: 'An HTTPS destination: the saved destination.' },
        ),
      ],
    },
    attachment_error: object({ code: str, message: str }, { description: 'When endpoint_id was given and attaching failed: the destination is saved, not attached.' }),
  },
  { optional: ['attachment_error'] },
);

export const destinationResponses = {
  created: answer(201, 'The new destination.', createdSchema),
  page: answer(200, 'A page of saved destinations the key may see, newest first.', pageOf(object({ ...savedProperties, endpoint_count: int }))),
  one: answer(200, 'The saved destination and the endpoints it is attached to.', dataOf(savedWithEndpointsSchema)),
  updated: answer(200, 'The saved destination as changed.', dataOf(savedWithEndpointsSchema)),
  deleted: noContent('Deleted, and detached from every endpoint.'),
  forwards: answer(200, "The endpoint's forward destinations, unpaged.", listOf(forwardDestinationSchema)),
  attached: { ...answer(201, 'The forward destination made on the endpoint.', dataOf(forwardDestinationSchema)), ...errors(409) },
  forwardUpdated: answer(200, 'The forward destination as changed.', dataOf(forwardDestinationSchema)),
  forwardDeleted: noContent('Removed from the endpoint.'),
};
