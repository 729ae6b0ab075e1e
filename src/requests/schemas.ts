/**
 * Response schemas of the captured-requests routes: they document the
 * answers in the OpenAPI document and let Fastify serialise them with a
 * compiled serialiser instead of JSON.stringify. A field the presenter
 * (present.ts) adds must be added here too, or it is dropped from the answer:
 * test/http/openapi.test.ts compares the two.
 */
const nullableString = { type: ['string', 'null'] } as const;

export const captureSummarySchema = {
  type: 'object',
  additionalProperties: false,
  required: ['id', 'endpoint_id', 'received_at', 'method', 'path', 'query', 'headers', 'content_type', 'body_size', 'source_ip'],
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
} as const;

const pageMeta = {
  type: 'object',
  additionalProperties: false,
  required: ['count', 'has_more', 'next_cursor'],
  properties: { count: { type: 'integer' }, has_more: { type: 'boolean' }, next_cursor: { type: ['string', 'null'] } },
} as const;

export const capturePageResponse = {
  200: {
    type: 'object',
    additionalProperties: false,
    required: ['data'],
    properties: {
      data: { type: 'object', additionalProperties: false, required: ['data', 'meta'], properties: { data: { type: 'array', items: captureSummarySchema }, meta: pageMeta } },
    },
  },
} as const;

export const captureResponse = {
  200: { type: 'object', additionalProperties: false, required: ['data'], properties: { data: captureSchema } },
} as const;
