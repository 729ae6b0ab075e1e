import type { ApiKey } from './api-keys.ts';

/** A key as the API shows it after creation: never the key or its hash. */
export function presentApiKey(k: ApiKey) {
  return {
    id: k.id,
    name: k.name,
    display_prefix: k.display_prefix,
    organization_id: k.organization_id,
    member_id: k.member_id,
    access_mode: k.access_mode,
    scopes: k.scopes,
    expires_at: k.expires_at,
    revoked_at: k.revoked_at,
    last_used_at: k.last_used_at,
    created_by: k.created_by,
    created_at: k.created_at,
  };
}

/** JSON schema of the fields that create or edit a key's access, shared by /v1 and /admin/v1. */
export const keyAccessSchema = {
  access_mode: { type: 'string', enum: ['full', 'custom'] },
  scopes: { type: 'array', items: { type: 'string' }, maxItems: 50 },
} as const;

export const keyCreateSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['name'],
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 100 },
    ...keyAccessSchema,
    expires_at: { type: ['string', 'null'] },
  },
} as const;

export interface KeyCreateBody {
  name: string;
  access_mode?: 'full' | 'custom';
  scopes?: string[];
  expires_at?: string | null;
}

/** Parses expires_at strictly: ISO 8601 with a time zone, or nothing. */
export function parseExpiry(value: string | null | undefined): Date | undefined | 'invalid' {
  if (value === undefined || value === null) return undefined;
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/.test(value)) return 'invalid';
  const d = new Date(value);
  return Number.isNaN(d.getTime()) ? 'invalid' : d;
}
