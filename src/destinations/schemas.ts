import { uuidSchema } from '../http/schemas.ts';
import { VISIBILITIES } from './rules.ts';

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
