// The one client of /v1 every page uses. The dashboard is a plain API client:
// everything it shows, a key can fetch with curl.
//
// - The key lives in this browser's localStorage only and goes in the
//   Authorization header, never into a URL (URLs land in logs and history).
// - A 401 means the key was revoked or expired: the session ends and the
//   sign-in page says why, instead of clicks silently doing nothing.
// - Every other failure is thrown as an ApiError with the API's code and
//   message, for the page to show where the action was.

const STORAGE_KEY = 'weir.key';
// why the last session ended, kept for this tab so a reload still says it
const REASON_KEY = 'weir.signout-reason';

export class ApiError extends Error {
  /** @param {number} status @param {string} code @param {string} message */
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

const listeners = new Set();
let current = { key: localStorage.getItem(STORAGE_KEY) || '', reason: sessionStorage.getItem(REASON_KEY) || '' };

/** The signed-in key (or ''), and why the last session ended, for the sign-in page. */
export const session = {
  get key() {
    return current.key;
  },
  get reason() {
    return current.reason;
  },
  signIn(key) {
    localStorage.setItem(STORAGE_KEY, key);
    sessionStorage.removeItem(REASON_KEY);
    set({ key, reason: '' });
  },
  /** @param {string} [reason] shown on the sign-in page */
  signOut(reason = '') {
    localStorage.removeItem(STORAGE_KEY);
    if (reason) sessionStorage.setItem(REASON_KEY, reason);
    else sessionStorage.removeItem(REASON_KEY);
    set({ key: '', reason });
  },
  /** @returns {() => void} unsubscribe */
  subscribe(fn) {
    listeners.add(fn);
    return () => listeners.delete(fn);
  },
};

function set(next) {
  current = next;
  for (const fn of listeners) fn(current);
}

export const REVOKED_MESSAGE = 'Your API key is no longer accepted (revoked or expired). Sign in with another key.';

/**
 * Sends one request to /v1 with the session's key and answers the parsed JSON
 * (null for 204). A 401 signs the session out; any other error is thrown.
 * @param {'GET'|'POST'|'PATCH'|'PUT'|'DELETE'} method
 * @param {string} path below /v1, e.g. '/endpoints'
 * @param {unknown} [body]
 * @param {{ signal?: AbortSignal, key?: string }} [opts] key: try a key other than the session's (sign-in)
 */
export async function request(method, path, body, opts = {}) {
  const key = opts.key ?? current.key;
  let res;
  try {
    res = await fetch('/v1' + path, {
      method,
      headers: {
        authorization: 'Bearer ' + key,
        // lets the server log the dashboard's own reads at debug, not info
        'x-weir-client': 'dashboard',
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: opts.signal,
    });
  } catch (err) {
    if (err?.name === 'AbortError') throw err;
    throw new ApiError(0, 'network_error', 'Weir did not answer. Is the server running? Retrying may help.');
  }
  if (res.status === 204) return null;
  const json = await res.json().catch(() => null);
  if (res.ok) return json;
  const code = json?.error?.code ?? 'http_' + res.status;
  const message = json?.error?.message ?? `The server answered ${res.status}.`;
  if (res.status === 401 && opts.key === undefined && key === current.key && key) session.signOut(REVOKED_MESSAGE);
  throw new ApiError(res.status, code, message);
}

export const api = {
  get: (path, opts) => request('GET', path, undefined, opts),
  post: (path, body, opts) => request('POST', path, body ?? {}, opts),
  patch: (path, body, opts) => request('PATCH', path, body, opts),
  put: (path, body, opts) => request('PUT', path, body, opts),
  del: (path, opts) => request('DELETE', path, undefined, opts),
  /** The raw Response (for bodies that are not JSON, such as a captured body); 401 still signs out. */
  async raw(path, opts = {}) {
    const res = await fetch('/v1' + path, { headers: { authorization: 'Bearer ' + current.key, 'x-weir-client': 'dashboard' }, signal: opts.signal });
    if (res.status === 401) session.signOut(REVOKED_MESSAGE);
    if (!res.ok) {
      const json = await res.json().catch(() => null);
      throw new ApiError(res.status, json?.error?.code ?? 'http_' + res.status, json?.error?.message ?? `The server answered ${res.status}.`);
    }
    return res;
  },
};

/**
 * Every page of a paged list (`{data: {data, meta}}`), up to `max` items: for
 * the small lists a page shows whole (agents, members, keys).
 */
export async function getAll(path, max = 1000) {
  const items = [];
  let before = null;
  const sep = path.includes('?') ? '&' : '?';
  do {
    const page = (await api.get(`${path}${sep}limit=100${before ? '&before=' + encodeURIComponent(before) : ''}`)).data;
    items.push(...page.data);
    before = page.meta?.has_more ? page.meta.next_cursor : null;
  } while (before && items.length < max);
  return items;
}
