import type { Credentials } from './credentials.ts';

/** An answer of the API that was not a success: printed as one line, exit code 1. */
export class ApiFailure extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** A small JSON client of /v1 for the CLI: the bearer key, the envelope unwrapped, errors as ApiFailure. */
export class WeirApi {
  constructor(readonly c: Credentials) {}

  async call<T = any>(method: string, path: string, body?: unknown): Promise<T> {
    let res: Response;
    try {
      res = await fetch(this.c.server + path, {
        method,
        headers: { authorization: `Bearer ${this.c.key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    } catch (err) {
      throw new ApiFailure(0, 'unreachable', `cannot reach ${this.c.server}: ${(err as { cause?: Error }).cause?.message ?? (err as Error).message}`);
    }
    if (res.status === 204) return undefined as T;
    const text = await res.text();
    let json: any;
    try {
      json = JSON.parse(text);
    } catch {
      throw new ApiFailure(res.status, 'bad_response', `${method} ${path} answered ${res.status} with a body that is not JSON`);
    }
    if (!res.ok) throw new ApiFailure(res.status, json?.error?.code ?? 'error', json?.error?.message ?? `${method} ${path} answered ${res.status}`);
    return json.data as T;
  }

  /** Every item of a paged list (follows next_cursor). */
  async all<T = any>(path: string): Promise<T[]> {
    const items: T[] = [];
    let before: string | undefined;
    for (;;) {
      const sep = path.includes('?') ? '&' : '?';
      const page = await this.call<{ data: T[]; meta: { has_more: boolean; next_cursor: string | null } }>('GET', `${path}${sep}limit=100${before ? `&before=${before}` : ''}`);
      items.push(...page.data);
      if (!page.meta.has_more || !page.meta.next_cursor) return items;
      before = page.meta.next_cursor;
    }
  }

  /** An endpoint given by id or by name. */
  async endpoint(ref: string): Promise<any> {
    if (/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(ref)) return this.call('GET', `/v1/endpoints/${ref}`);
    const found = (await this.call<any[]>('GET', '/v1/endpoints')).filter((e) => e.name === ref || e.slug === ref);
    if (found.length === 0) throw new ApiFailure(404, 'not_found', `no endpoint named "${ref}"`);
    if (found.length > 1) throw new ApiFailure(400, 'ambiguous', `${found.length} endpoints are named "${ref}": use the id`);
    return found[0];
  }
}
