import { createWeirClient, unwrap, WeirApiError, type WeirClient } from '../../client/index.ts';
import type { Credentials } from './credentials.ts';

/** An answer of the API that was not a success: printed as one line, exit code 1 (the typed client's error). */
export { WeirApiError as ApiFailure };

/** The CLI's connection: the typed client (weir/client) set up with the stored server and key. */
export interface WeirApi {
  readonly c: Credentials;
  readonly client: WeirClient;
}

export function connect(c: Credentials): WeirApi {
  return { c, client: createWeirClient({ baseUrl: c.server, apiKey: c.key }) };
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** An endpoint given by id or by name (or slug). */
export async function findEndpoint(api: WeirApi, ref: string) {
  if (UUID.test(ref)) return unwrap(api.client.GET('/v1/endpoints/{id}', { params: { path: { id: ref } } }));
  const found = (await unwrap(api.client.GET('/v1/endpoints'))).filter((e) => e.name === ref || e.slug === ref);
  if (found.length === 0) throw new WeirApiError(404, 'not_found', `no endpoint named "${ref}"`);
  if (found.length > 1) throw new WeirApiError(400, 'ambiguous', `${found.length} endpoints are named "${ref}": use the id`);
  return found[0];
}
