import createClient, { type Client } from 'openapi-fetch';
import type { components, operations, paths, webhooks } from './schema.ts';

/**
 * The typed client of the Weir API, exported as `weir/client`: the types are
 * generated from /v1/openapi.json by openapi-typescript into schema.ts
 * (`npm run generate:client`; CI fails when they differ from the document),
 * and openapi-fetch, a few KB, does the calls. The CLI uses this client too.
 *
 *   const weir = createWeirClient({ baseUrl: 'https://weir.example.com', apiKey });
 *   const endpoints = await unwrap(weir.GET('/v1/endpoints'));
 */
export type { components, operations, paths, webhooks };
export type WeirClient = Client<paths>;

/** The body Weir POSTs to a subscriber for an event of type T (from the document's `webhooks`). */
export type WeirEvent<T extends keyof webhooks> = webhooks[T]['post']['requestBody']['content']['application/json'];

export interface WeirClientOptions {
  /** The installation's base URL (its WEIR_PUBLIC_URL), without /v1. */
  baseUrl: string;
  /** An API key (`wr_live_...`), or the operator token for /admin/v1. */
  apiKey: string;
  /** A fetch to use instead of the global one (tests, proxies). */
  fetch?: typeof fetch;
}

export function createWeirClient(o: WeirClientOptions): WeirClient {
  return createClient<paths>({
    baseUrl: o.baseUrl.replace(/\/+$/, ''),
    headers: { authorization: `Bearer ${o.apiKey}` },
    ...(o.fetch ? { fetch: o.fetch } : {}),
  });
}

/** An answer that was not a success, with the `{error: {code, message}}` it carried; status 0 when the server was not reached. */
export class WeirApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'WeirApiError';
  }
}

type Answer<D> = { data?: D; error?: unknown; response: Response };
type Unwrapped<D> = D extends { data: infer T } ? T : D;

/**
 * The `data` of a success answer (undefined for 204), or a WeirApiError
 * carrying the error envelope's code and message. A server that cannot be
 * reached, or answers something that is not JSON, is a WeirApiError too.
 */
export async function unwrap<D>(call: Promise<Answer<D>>): Promise<Unwrapped<NonNullable<D>>> {
  let answer: Answer<D>;
  try {
    answer = await call;
  } catch (err) {
    if (err instanceof SyntaxError) throw new WeirApiError(0, 'bad_response', `the answer is not JSON: ${err.message}`);
    const cause = (err as { cause?: Error }).cause?.message ?? (err as Error).message;
    throw new WeirApiError(0, 'unreachable', `cannot reach the server: ${cause}`);
  }
  const { data, error, response } = answer;
  if (!response.ok) {
    const envelope = (typeof error === 'object' && error !== null ? error : {}) as { error?: { code?: string; message?: string } };
    throw new WeirApiError(response.status, envelope.error?.code ?? 'error', envelope.error?.message ?? `${response.url} answered ${response.status}`);
  }
  return (data === undefined ? undefined : (data as { data: unknown }).data) as Unwrapped<NonNullable<D>>;
}

/**
 * Every item of a paged list (`{data: {data: [...], meta: {has_more, next_cursor}}}`),
 * following the cursor: `page(before)` asks for the page before a cursor.
 */
export async function allPages<T>(page: (before: string | undefined) => Promise<Answer<{ data: { data: T[]; meta: { has_more: boolean; next_cursor: string | null } } }>>): Promise<T[]> {
  const items: T[] = [];
  let before: string | undefined;
  for (;;) {
    const p = await unwrap(page(before));
    items.push(...p.data);
    if (!p.meta.has_more || !p.meta.next_cursor) return items;
    before = p.meta.next_cursor;
  }
}
