// Paging of the API's cursor lists ({data, meta: {has_more, next_cursor}})
// kept in the URL: `?before=<cursor>` is the page, so a page of a list can be
// linked to and reloaded like any other. The API pages backwards only (newest
// first), so the way back is "Newest", not "Previous".
import { html } from './html.js';

/** The `before` cursor of the current URL's page ('' for the newest page). */
export function pageCursor(query) {
  return query.get('before') || '';
}

/** "&before=…" (or '') to append to an API path that already has a query string. */
export function beforeParam(query) {
  const before = pageCursor(query);
  return before ? '&before=' + encodeURIComponent(before) : '';
}

/** Links to the newest page and to the next (older) page, keeping the other query parameters. */
export function PagerLinks({ path, query, meta, label = 'Pages' }) {
  const at = pageCursor(query);
  if (!at && !meta?.has_more) return null;
  const href = (before) => {
    const q = new URLSearchParams(query);
    if (before) q.set('before', before);
    else q.delete('before');
    const s = q.toString();
    return path + (s ? '?' + s : '');
  };
  return html`<nav class="pager" aria-label=${label}>
    ${at ? html`<a href=${href('')}>Newest</a>` : null}
    ${meta?.has_more ? html`<a href=${href(meta.next_cursor)}>Older</a>` : null}
  </nav>`;
}
