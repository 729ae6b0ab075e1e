/**
 * Building blocks of the routes' response schemas. A response schema does
 * two things: it documents the answer in the OpenAPI document
 * (src/http/openapi.ts), and Fastify serialises the answer with it
 * (fast-json-stringify), which writes only the properties the schema names.
 * So a field a presenter returns must be in its schema or it silently
 * disappears: test/http/openapi.test.ts calls every route and compares what
 * was sent with what JSON.stringify would have sent.
 *
 * Objects are closed (additionalProperties: false) so the document says
 * exactly what a client gets; every property is required (always present,
 * null when empty) unless listed as optional.
 */

/** The error envelope every route answers errors with (src/http/errors.ts). */
export const errorEnvelopeSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['error'],
  properties: {
    error: {
      type: 'object',
      additionalProperties: false,
      required: ['code', 'message'],
      properties: { code: { type: 'string' }, message: { type: 'string' } },
    },
  },
  example: { error: { code: 'not_found', message: 'Endpoint 0193a8c2-0000-7000-8000-000000000000 not found.' } },
} as const;

export type JsonSchema = Record<string, unknown>;

export const str = { type: 'string' } as const;
export const nullableStr = { type: ['string', 'null'] } as const;
export const int = { type: 'integer' } as const;
export const nullableInt = { type: ['integer', 'null'] } as const;
export const num = { type: 'number' } as const;
export const bool = { type: 'boolean' } as const;
export const uuid = { type: 'string', format: 'uuid' } as const;
export const nullableUuid = { type: ['string', 'null'], format: 'uuid' } as const;
export const time = { type: 'string', format: 'date-time' } as const;
export const nullableTime = { type: ['string', 'null'], format: 'date-time' } as const;
export const strings = { type: 'array', items: str } as const;

export const arrayOf = (items: JsonSchema): JsonSchema => ({ type: 'array', items });

export const oneOfStrings = (values: readonly string[], nullable = false): JsonSchema => ({
  type: nullable ? ['string', 'null'] : 'string',
  enum: nullable ? [...values, null] : [...values],
});

/** A closed object whose properties are all required except `optional`. */
export function object(properties: Record<string, JsonSchema>, opts: { optional?: readonly string[]; description?: string; example?: unknown } = {}): JsonSchema {
  const optional = new Set(opts.optional ?? []);
  return {
    type: 'object',
    additionalProperties: false,
    required: Object.keys(properties).filter((k) => !optional.has(k)),
    properties,
    ...(opts.description ? { description: opts.description } : {}),
    ...(opts.example !== undefined ? { example: opts.example } : {}),
  };
}

/**
 * An object whose keys are data rather than names (an event's payload, an
 * audit entry's details): documented as open, serialised as given.
 */
export const openObject = (description: string): JsonSchema => ({ type: 'object', additionalProperties: true, description });

const pageMeta = object({ count: int, has_more: bool, next_cursor: nullableStr });

/** `{data: item}` */
export const dataOf = (item: JsonSchema): JsonSchema => object({ data: item });
/** `{data: {data: [item], meta}}`: a page (src/http/paging.ts). */
export const pageOf = (item: JsonSchema): JsonSchema => dataOf(object({ data: arrayOf(item), meta: pageMeta }));
/** `{data: {data: [item]}}`: a whole list, unpaged. */
export const listOf = (item: JsonSchema): JsonSchema => dataOf(object({ data: arrayOf(item) }));

/** A success answer: `{[status]: schema}` with the description the document shows. */
export const answer = (status: 200 | 201 | 202, description: string, schema: JsonSchema) => ({ [status]: { description, ...schema } });

/** 204: no body. */
export const noContent = (description: string) => ({ 204: { description, type: 'null' } });

const ERROR_DESCRIPTIONS: Record<number, string> = {
  409: 'The resource is in a state that forbids this (`conflict`).',
  429: "The organization's plan allows no more (`plan_limit`).",
};

/** Error statuses a route answers beyond the ones every route documents (src/http/openapi.ts). */
export const errors = (...statuses: (409 | 429)[]) =>
  Object.fromEntries(statuses.map((s) => [s, { description: ERROR_DESCRIPTIONS[s], ...errorEnvelopeSchema }]));
