// Real URLs through the History API, so an endpoint, a request or an incident
// can be linked to, bookmarked and reloaded. The server answers index.html
// for every page path (src/dashboard/routes.ts PAGE_PREFIXES).
import { useEffect, useState } from './html.js';

const listeners = new Set();

/** Goes to `href` (a path on this origin) without reloading the page. */
export function navigate(href, { replace = false } = {}) {
  if (href === location.pathname + location.search) return;
  if (replace) history.replaceState(null, '', href);
  else history.pushState(null, '', href);
  notify();
}

function notify() {
  for (const fn of listeners) fn();
}

addEventListener('popstate', notify);

// Plain <a href="/..."> links inside the app navigate in place; modified
// clicks (new tab), downloads, other origins and the API's own pages do not.
document.addEventListener('click', (e) => {
  if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  const a = e.target instanceof Element ? e.target.closest('a[href]') : null;
  if (!a || a.target || a.hasAttribute('download') || a.origin !== location.origin) return;
  if (/^\/(v1|admin|reference|metrics|dashboard)(\/|$)/.test(a.pathname)) return;
  e.preventDefault();
  navigate(a.pathname + a.search);
});

/** The current location, re-rendering the caller when it changes. */
export function useLocation() {
  const [, setTick] = useState(0);
  const rendered = location.pathname + location.search;
  useEffect(() => {
    const fn = () => setTick((n) => n + 1);
    listeners.add(fn);
    // a child's effect may have navigated before this one subscribed (the redirect of / runs first)
    if (location.pathname + location.search !== rendered) fn();
    return () => listeners.delete(fn);
  }, []);
  return { path: location.pathname.replace(/\/+$/, '') || '/', query: new URLSearchParams(location.search) };
}

/**
 * Matches a path against patterns such as '/endpoints/:id/requests/:requestId'.
 * A trailing '/*' matches the rest (as params.rest). Answers the params or null.
 */
export function matchPath(pattern, path) {
  const want = pattern.split('/').filter(Boolean);
  const got = path.split('/').filter(Boolean);
  const params = {};
  for (let i = 0; i < want.length; i++) {
    if (want[i] === '*') {
      params.rest = got.slice(i).map(decodeURIComponent).join('/');
      return params;
    }
    if (i >= got.length) return null;
    if (want[i].startsWith(':')) params[want[i].slice(1)] = decodeURIComponent(got[i]);
    else if (want[i] !== got[i]) return null;
  }
  return got.length === want.length ? params : null;
}

/** Replaces the query string (filters, tabs) keeping the path; empty values are dropped. */
export function setQuery(values, { replace = true } = {}) {
  const q = new URLSearchParams(location.search);
  for (const [k, v] of Object.entries(values)) {
    if (v === undefined || v === null || v === '') q.delete(k);
    else q.set(k, String(v));
  }
  const s = q.toString();
  navigate(location.pathname + (s ? '?' + s : ''), { replace });
}
