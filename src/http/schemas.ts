/** JSON-schema fragments used by several routes. */
export const UUID_PATTERN = '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$';

export const uuidSchema = { type: 'string', pattern: UUID_PATTERN } as const;

/** `params` schema for routes with one `:id`; a malformed id is a 404 handled in the route, not a 400. */
export const idParams = { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] } as const;

import { isUuid } from '../db/ids.ts';
import { notFound } from './errors.ts';

/** An id from the path: anything that is not a UUID cannot exist, so it is a 404 like any unknown id. */
export function pathId(id: string, what: string): string {
  if (!isUuid(id)) throw notFound(`${what} ${JSON.stringify(String(id).slice(0, 64))} not found.`);
  return id.toLowerCase();
}
