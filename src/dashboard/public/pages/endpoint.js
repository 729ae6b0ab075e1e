// One endpoint: its ingest URL, pause/resume, delete, and three tabs, each
// its own URL: Requests (/endpoints/:id, and /endpoints/:id/requests/:requestId
// for a selected request), Destinations (/endpoints/:id/destinations) and
// Settings (/endpoints/:id/settings).
import { api } from '../lib/api.js';
import { html, useEffect, useRef, useState } from '../lib/html.js';
import { fieldSetter, useAction, useLoad } from '../lib/hooks.js';
import { navigate, setQuery } from '../lib/router.js';
import { can, useMe } from '../lib/session.js';
import { followRequests } from '../lib/tail.js';
import { formatBytes, formatTime, timeAgo } from '../lib/format.js';
import { Badge, ConfirmButton, CopyButton, ErrorNote, Field, Loading, Page, TabLinks } from '../lib/ui.js';
import { EndpointDestinations } from './endpoint-destinations.js';
import { IngestResponseSettings } from './endpoint-response.js';
import { VerificationBadge, VerificationSettings } from './endpoint-verification.js';
import { DeduplicationSettings, DuplicateBadge } from './endpoint-routing.js';
import { EndpointFields } from './endpoints.js';
import { RequestDetail } from './request-detail.js';

/** @param {{ params: { id: string, rest?: string }, query: URLSearchParams }} props */
export function EndpointPage({ params, query }) {
  // keyed by id: nothing of endpoint A (its list, its live tail, its selection) survives into endpoint B
  return html`<${EndpointView} key=${params.id} id=${params.id} rest=${params.rest ?? ''} query=${query} />`;
}

function EndpointView({ id, rest, query }) {
  const me = useMe();
  const ep = useLoad((signal) => api.get(`/endpoints/${id}`, { signal }).then((r) => r.data), [id]);
  const endpoint = ep.data;
  const requestMatch = /^requests\/([^/]+)$/.exec(rest);
  const tab = rest === 'destinations' ? 'destinations' : rest === 'settings' ? 'settings' : 'requests';
  if (!endpoint) {
    if (ep.error) {
      return html`<${Page} title=${ep.error.status === 404 ? 'Endpoint not found' : 'Endpoint'}>
        <${ErrorNote} error=${ep.error} />
        <p><a href="/endpoints">All endpoints</a></p>
      <//>`;
    }
    return html`<${Loading} />`;
  }
  const base = '/endpoints/' + endpoint.id;
  return html`<${Page} title=${endpoint.name} wide=${tab === 'requests'} actions=${html`<${EndpointActions} endpoint=${endpoint} me=${me} onChange=${(e) => ep.setData(e)} />`}>
    <nav class="crumbs" aria-label="Breadcrumb"><a href="/endpoints">Endpoints</a> <span aria-hidden="true">/</span> <a href=${base} aria-current="page">${endpoint.name}</a></nav>
    <dl class="props endpoint-props">
      <dt>Ingest URL</dt>
      <dd><code>${endpoint.ingest_url}</code> <${CopyButton} text=${endpoint.ingest_url} name="Copy ingest URL" /></dd>
      <dt>State</dt>
      <dd>${endpoint.paused
        ? html`<${Badge} tone="warn">paused<//> <span class="muted">the ingest URL answers 423 and captures nothing</span>`
        : html`<${Badge} tone="ok">active<//>`}</dd>
      <dt>Forward URL</dt>
      <dd>${endpoint.forward_url ? html`<code>${endpoint.forward_url}</code>` : html`<span class="muted">none</span>`}</dd>
      ${endpoint.description ? html`<dt>Description</dt><dd>${endpoint.description}</dd>` : null}
    </dl>
    <${TabLinks} label="Endpoint" current=${tab} tabs=${[
      { id: 'requests', label: 'Requests', href: base },
      { id: 'destinations', label: 'Destinations', href: base + '/destinations' },
      { id: 'settings', label: 'Settings', href: base + '/settings' },
    ]} />
    ${tab === 'destinations' ? html`<${EndpointDestinations} endpoint=${endpoint} />` : null}
    ${tab === 'settings' ? html`<${EndpointSettings} endpoint=${endpoint} me=${me} onSaved=${(e) => ep.setData(e)} />` : null}
    ${tab === 'requests' ? html`<${RequestsTab} endpoint=${endpoint} requestId=${requestMatch?.[1] ?? null} query=${query} />` : null}
  <//>`;
}

function EndpointActions({ endpoint, me, onChange }) {
  const pause = useAction();
  const remove = useAction();
  const toggle = () =>
    pause.run(async () => {
      onChange((await api.patch(`/endpoints/${endpoint.id}`, { paused: !endpoint.paused })).data);
    });
  const del = () =>
    remove.run(async () => {
      await api.del(`/endpoints/${endpoint.id}`);
      navigate('/endpoints');
    });
  return html`
    ${can(me, 'endpoints.edit', 'endpoints:write')
      ? html`<button type="button" disabled=${pause.busy} onClick=${toggle}>${endpoint.paused ? 'Resume' : 'Pause'}</button>`
      : null}
    ${can(me, 'endpoints.delete', 'endpoints:write')
      ? html`<${ConfirmButton} label="Delete" confirmLabel="Delete endpoint" busy=${remove.busy}
          question=${`Delete ${endpoint.name} and every request captured on it?`} onConfirm=${del} />`
      : null}
    <${ErrorNote} error=${pause.error || remove.error} id="endpoint-action-error" />`;
}

function EndpointSettings({ endpoint, me, onSaved }) {
  const initial = { name: endpoint.name, description: endpoint.description ?? '', forward_url: endpoint.forward_url ?? '' };
  const [values, setValues] = useState(initial);
  const [saved, setSaved] = useState('');
  const action = useAction();
  const mayEdit = can(me, 'endpoints.edit', 'endpoints:write');
  const submit = (e) => {
    e.preventDefault();
    setSaved('');
    action.run(async () => {
      const body = {
        name: values.name.trim(),
        // empty clears (null), as the API says
        description: values.description.trim() || null,
        forward_url: values.forward_url.trim() || null,
      };
      const updated = (await api.patch(`/endpoints/${endpoint.id}`, body)).data;
      onSaved(updated);
      setValues({ name: updated.name, description: updated.description ?? '', forward_url: updated.forward_url ?? '' });
      setSaved('Saved.');
    });
  };
  return html`<section aria-labelledby="settings-heading">
    <h2 id="settings-heading">Settings</h2>
    ${mayEdit ? null : html`<p class="notice">Your key cannot edit endpoints (it needs the endpoints:write scope and a developer role or above).</p>`}
    <form onSubmit=${submit}>
      <fieldset disabled=${!mayEdit} class="plain">
        <legend class="visually-hidden">Endpoint settings</legend>
        <${EndpointFields} prefix="settings" values=${values} onInput=${(v) => (setValues(v), setSaved(''))} />
      </fieldset>
      <div class="actions">
        <button type="submit" class="primary" disabled=${!mayEdit || action.busy}>${action.busy ? 'Saving…' : 'Save'}</button>
        <span class="ok" role="status">${saved}</span>
      </div>
      <${ErrorNote} error=${action.error} id="settings-error" />
    </form>
  </section>
  <${VerificationSettings} endpoint=${endpoint} mayEdit=${mayEdit} onSaved=${onSaved} />
  <${IngestResponseSettings} endpoint=${endpoint} mayEdit=${mayEdit} onSaved=${onSaved} />
  <${DeduplicationSettings} endpoint=${endpoint} mayEdit=${mayEdit} onSaved=${onSaved} />`;
}

// ---- Requests tab ----

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS'];
const FILTER_KEYS = ['q', 'method', 'since', 'until', 'delivery_status', 'verification', 'duplicate'];
/** The capture's delivery summary (GET .../requests `delivery`, docs/capture.md): its label and tone. */
const DELIVERY = {
  failed: ['failed', 'bad'],
  retrying: ['retrying', 'warn'],
  pending: ['queued', 'muted'],
  delivered: ['delivered', 'ok'],
  no_destinations: ['not forwarded', 'muted'],
  filtered: ['filtered out', 'muted'],
};

function filtersOf(query) {
  const f = {};
  for (const k of FILTER_KEYS) {
    const v = query.get(k);
    if (v) f[k] = v;
  }
  return f;
}

/** An ISO timestamp as the value of a datetime-local input (the browser's time zone), and back. */
function toLocalInput(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return '';
  return new Date(d.getTime() - d.getTimezoneOffset() * 60000).toISOString().slice(0, 16);
}
function fromLocalInput(v) {
  if (!v) return '';
  const d = new Date(v);
  return Number.isNaN(d.getTime()) ? '' : d.toISOString();
}

/** Whether a capture from the live tail passes the filters the browser can check itself (q is the API's: see onRequest). */
function passesLocal(r, f) {
  if (f.method && !f.method.toUpperCase().split(',').includes(r.method.toUpperCase())) return false;
  const t = new Date(r.received_at).getTime();
  if (f.since && t < new Date(f.since).getTime()) return false;
  if (f.until && t >= new Date(f.until).getTime()) return false;
  if (f.verification && r.verification?.status !== f.verification) return false;
  if (f.duplicate && !!r.duplicate_of !== (f.duplicate === 'true')) return false;
  return true;
}

function listPath(endpointId, f, extra) {
  const q = new URLSearchParams({ limit: '50', ...f, ...extra });
  return `/endpoints/${endpointId}/requests?${q}`;
}

/** The lowest UUIDv7 of a millisecond: a Last-Event-ID that resumes from that moment. */
function idAt(ms) {
  const hex = Math.max(0, Math.floor(ms)).toString(16).padStart(12, '0');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-7000-8000-000000000000`;
}

function RequestsTab({ endpoint, requestId, query }) {
  const filters = filtersOf(query);
  const filterKey = JSON.stringify(filters);
  const search = FILTER_KEYS.some((k) => query.get(k)) ? '?' + new URLSearchParams(filters) : '';
  return html`<div class=${'req-split' + (requestId ? ' has-detail' : '')}>
    <div class="req-list-pane">
      <${RequestFilters} filters=${filters} />
      <${RequestList} key=${filterKey} endpoint=${endpoint} filters=${filters} selectedId=${requestId} search=${search} />
    </div>
    ${requestId
      ? html`<div class="req-detail-pane">
          <a class="back-to-list" href=${'/endpoints/' + endpoint.id + search}>← All requests</a>
          <${RequestDetail} key=${requestId} requestId=${requestId} endpoint=${endpoint} />
        </div>`
      : null}
  </div>`;
}

function RequestFilters({ filters }) {
  const [v, setV] = useState({
    q: filters.q ?? '',
    method: filters.method ?? '',
    since: toLocalInput(filters.since),
    until: toLocalInput(filters.until),
    delivery_status: filters.delivery_status ?? '',
    verification: filters.verification ?? '',
    duplicate: filters.duplicate ?? '',
  });
  const set = fieldSetter(setV);
  const apply = (e) => {
    e.preventDefault();
    setQuery({ q: v.q.trim(), method: v.method, since: fromLocalInput(v.since), until: fromLocalInput(v.until), delivery_status: v.delivery_status, verification: v.verification, duplicate: v.duplicate });
  };
  const clear = () => {
    setV({ q: '', method: '', since: '', until: '', delivery_status: '', verification: '', duplicate: '' });
    setQuery({ q: '', method: '', since: '', until: '', delivery_status: '', verification: '', duplicate: '' });
  };
  const active = Object.keys(filters).length > 0;
  // folded away until used, so the list starts near the top on a phone
  const [open, setOpen] = useState(active);
  return html`<details class="filters-box" open=${open} onToggle=${(e) => setOpen(e.currentTarget.open)}>
    <summary>Search and filter${active ? html` <span class="muted small">(${Object.entries(filters).map(([k, x]) => `${k}: ${k === 'since' || k === 'until' ? new Date(x).toLocaleString() : x}`).join(', ')})</span>` : null}</summary>
    <form class="inline filters" role="search" aria-label="Filter requests" onSubmit=${apply}>
    <${Field} id="filter-q" label="Search">
      <input id="filter-q" type="search" maxlength="200" value=${v.q} onInput=${set('q')} aria-describedby="filter-q-hint" />
    <//>
    <small class="hint visually-hidden" id="filter-q-hint">Text in a header, the path and query, or the body</small>
    <${Field} id="filter-method" label="Method">
      <select id="filter-method" value=${v.method} onChange=${set('method')}>
        <option value="">Any</option>
        ${[...new Set([...METHODS, ...(v.method && !METHODS.includes(v.method) ? [v.method] : [])])].map((m) => html`<option value=${m}>${m}</option>`)}
      </select>
    <//>
    <${Field} id="filter-delivery" label="Delivery">
      <select id="filter-delivery" value=${v.delivery_status} onChange=${set('delivery_status')}>
        <option value="">Any</option>
        ${Object.entries(DELIVERY).map(([value, [label]]) => html`<option value=${value}>${label}</option>`)}
      </select>
    <//>
    <${Field} id="filter-verification" label="Signature">
      <select id="filter-verification" value=${v.verification} onChange=${set('verification')}>
        <option value="">Any</option>
        <option value="verified">verified</option>
        <option value="failed">failed</option>
      </select>
    <//>
    <${Field} id="filter-duplicate" label="Duplicates">
      <select id="filter-duplicate" value=${v.duplicate} onChange=${set('duplicate')}>
        <option value="">Any</option>
        <option value="true">only duplicates</option>
        <option value="false">no duplicates</option>
      </select>
    <//>
    <${Field} id="filter-since" label="From">
      <input id="filter-since" type="datetime-local" value=${v.since} onInput=${set('since')} />
    <//>
    <${Field} id="filter-until" label="Until">
      <input id="filter-until" type="datetime-local" value=${v.until} onInput=${set('until')} />
    <//>
    <div class="filter-buttons">
      <button type="submit">Filter</button>
      ${active ? html`<button type="button" onClick=${clear}>Clear filters</button>` : null}
    </div>
  </form>
  </details>`;
}

const LINK_TEXT = { connecting: 'connecting…', live: 'live', reconnecting: 'reconnecting…' };

/**
 * The newest page once, then the live tail from the newest row shown: a new
 * capture is put at the top as it arrives, without reading the list again.
 * "Older" appends the page before the oldest row and leaves the tail alone.
 */
function RequestList({ endpoint, filters, selectedId, search }) {
  const [items, setItems] = useState(null);
  const [error, setError] = useState(null);
  const [cursor, setCursor] = useState(null);
  const [link, setLink] = useState('connecting');
  const older = useAction();
  const seen = useRef(new Set());
  const filtered = Object.keys(filters).length > 0;
  // "12 s ago" moves on by itself
  const [, setTick] = useState(0);
  useEffect(() => {
    const timer = setInterval(() => setTick((n) => n + 1), 20_000);
    return () => clearInterval(timer);
  }, []);

  useEffect(() => {
    let stopped = false;
    let tail = null;
    let retry = null;
    const abort = new AbortController();
    const add = (rows) => {
      const fresh = rows.filter((r) => !seen.current.has(r.id));
      if (fresh.length === 0) return;
      for (const r of fresh) seen.current.add(r.id);
      setItems((cur) => [...fresh, ...(cur ?? [])].sort((a, b) => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0)));
    };
    const onRequest = (r) => {
      if (stopped || r.endpoint_id !== endpoint.id || seen.current.has(r.id) || !passesLocal(r, filters)) return;
      if (!filters.q && !filters.delivery_status) return add([r]);
      // the text search also looks in the body, and the delivery status is the server's, neither of which the stream carries: ask the API about this one
      api.get(listPath(endpoint.id, filters, { since: r.received_at, limit: '100' })).then(
        (page) => !stopped && add(page.data.data),
        () => {},
      );
    };
    const load = async () => {
      const startedAt = Date.now();
      try {
        const page = (await api.get(listPath(endpoint.id, filters), { signal: abort.signal })).data;
        if (stopped) return;
        for (const r of page.data) seen.current.add(r.id);
        setItems(page.data);
        setError(null);
        setCursor(page.meta.has_more ? page.meta.next_cursor : null);
        tail = followRequests({
          endpointId: endpoint.id,
          // resume after the newest row shown; with none, from a minute before the list was read, so nothing captured meanwhile is missed
          after: page.data[0]?.id ?? idAt(startedAt - 60_000),
          onRequest,
          onState: (s) => !stopped && setLink(s),
        });
      } catch (err) {
        if (stopped || err?.name === 'AbortError') return;
        setError(err);
        // never give up: the server may be restarting
        retry = setTimeout(load, 3000);
      }
    };
    load();
    return () => {
      stopped = true;
      abort.abort();
      clearTimeout(retry);
      tail?.stop();
    };
  }, []);

  const loadOlder = () =>
    older.run(async () => {
      const page = (await api.get(listPath(endpoint.id, filters, { before: cursor }))).data;
      const fresh = page.data.filter((r) => !seen.current.has(r.id));
      for (const r of fresh) seen.current.add(r.id);
      setItems((cur) => [...(cur ?? []), ...fresh]);
      setCursor(page.meta.has_more ? page.meta.next_cursor : null);
    });

  const linkText = LINK_TEXT[link] ?? link;
  return html`<section class="req-list" aria-labelledby="requests-heading">
    <div class="req-list-head">
      <h2 id="requests-heading">Requests</h2>
      <span class=${'link-state ' + (link === 'live' ? 'ok' : link in LINK_TEXT ? 'muted' : 'bad')} role="status" id="tail-state">
        <span class="dot" aria-hidden="true"></span>${linkText === 'live' ? 'live: new requests appear here' : linkText}
      </span>
    </div>
    ${error ? html`<${ErrorNote} error=${error} />` : null}
    ${items === null && !error ? html`<${Loading} />` : null}
    ${items && items.length === 0
      ? filtered
        ? html`<p class="empty muted">No requests match these filters.</p>`
        : html`<${FirstCapture} endpoint=${endpoint} />`
      : null}
    ${items && items.length > 0
      ? html`<ul class="req-rows" aria-label=${`Requests captured on ${endpoint.name}, newest first`}>
          ${items.map((r) => html`<${RequestRow} key=${r.id} r=${r} endpointId=${endpoint.id} selected=${r.id === selectedId} search=${search} />`)}
        </ul>`
      : null}
    ${cursor
      ? html`<div class="older"><button type="button" disabled=${older.busy} onClick=${loadOlder}>${older.busy ? 'Loading…' : 'Older requests'}</button>
          <${ErrorNote} error=${older.error} /></div>`
      : null}
  </section>`;
}

function RequestRow({ r, endpointId, selected, search }) {
  const target = (r.path || '/') + (r.query ? '?' + r.query : '');
  return html`<li>
    <a class="req-row" href=${`/endpoints/${endpointId}/requests/${r.id}${search}`} aria-current=${selected ? 'page' : undefined} data-id=${r.id}>
      <span class="req-line"><span class=${'method m-' + r.method.toLowerCase()}>${r.method}</span> <span class="req-target">${target}</span></span>
      <span class="req-meta muted"><time datetime=${r.received_at} title=${formatTime(r.received_at)}>${timeAgo(r.received_at)}</time> · ${formatBytes(r.body_size)}${r.content_type ? ' · ' + r.content_type : ''}${r.delivery ? html` <${DeliveryBadge} d=${r.delivery} />` : null}${r.verification ? html` <${VerificationBadge} v=${r.verification} rejected=${r.rejected} />` : null}${r.duplicate_of ? html` <${DuplicateBadge} r=${r} />` : null}</span>
    </a>
  </li>`;
}

/** Where the capture's forwarding stands; a row from the live tail has no summary until the list is read again. */
function DeliveryBadge({ d }) {
  const [label, tone] = DELIVERY[d.status] ?? [d.status, 'muted'];
  const parts = ['delivered', 'retrying', 'pending', 'failed'].filter((k) => d[k] > 0).map((k) => `${d[k]} ${k === 'pending' ? 'queued' : k}`);
  const title = d.destinations ? `${d.destinations} destination${d.destinations === 1 ? '' : 's'}: ${parts.join(', ')}` : 'No destination: nothing to forward';
  return html`<span class=${'badge delivery ' + tone} data-delivery=${d.status} title=${title}>${label}</span>`;
}

/** What to do when nothing was captured yet: the URL and a command that sends a first request. */
function FirstCapture({ endpoint }) {
  const cmd = `curl -X POST '${endpoint.ingest_url}' -H 'content-type: application/json' -d '{"hello":"world"}'`;
  return html`<div class="panel empty-state">
    <p><strong>No requests yet.</strong> Send any HTTP request to the ingest URL (any method, any path below it) and it appears here at once.</p>
    <pre><code>${cmd}</code></pre>
    <${CopyButton} text=${cmd} name="Copy the example command" />
  </div>`;
}
