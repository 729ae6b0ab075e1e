// Routing in the dashboard (docs/routing.md): a destination's filter editor
// (JSON, checked in the page, the API's 400 shown beside it, and a test
// against a recent capture through POST /v1/requests/:id/filter-test), an
// endpoint's deduplication settings, and the badges of filtered forwards and
// duplicate captures. The destination forms use this module through
// useFilterField + FilterEditor and add one field to what they send.
import { api } from '../lib/api.js';
import { timeAgo } from '../lib/format.js';
import { html, useState } from '../lib/html.js';
import { fieldSetter, useAction, useLoad } from '../lib/hooks.js';
import { ErrorNote, Field } from '../lib/ui.js';

/** A filter as the editor's text: indented JSON, or '' for none (null). */
export const filterText = (filter) => (filter ? JSON.stringify(filter, null, 2) : '');

/**
 * The editor's text as a filter: { ok: true, value } (null when empty) or
 * { ok: false, message }. Only the JSON and its top-level shape are checked
 * here; the rules (operators, operands, bounds) are the API's, whose 400
 * names the offending path.
 */
export function parseFilterText(text) {
  if (text.trim() === '') return { ok: true, value: null };
  let value;
  try {
    value = JSON.parse(text);
  } catch (err) {
    return { ok: false, message: `The filter is not valid JSON: ${err.message}` };
  }
  if (value !== null && (typeof value !== 'object' || Array.isArray(value))) {
    return { ok: false, message: 'The filter is a JSON object with any of headers, path, query, body (or empty to forward everything).' };
  }
  return { ok: true, value };
}

/** Whether an API error is about the filter (its message names "filter…"), so the editor shows it rather than the form's foot. */
export const isFilterError = (err) => !!err && err.status === 400 && /"filter[".[]/.test(err.message ?? '');

/**
 * The filter field's state for a destination form: { text, setText, parsed,
 * touched, touch }. `parsed` is parseFilterText(text); a form sends
 * parsed.value as `filter` and refuses to submit while !parsed.ok.
 */
export function useFilterField(initial) {
  const [text, setText] = useState(filterText(initial));
  const [touched, setTouched] = useState(false);
  return { text, setText, parsed: parseFilterText(text), touched, touch: () => setTouched(true) };
}

/** What a create form adds to its body: `filter` when one was written (a new destination without one forwards everything). */
export const filterOf = (field) => (field.parsed.ok && field.parsed.value ? { filter: field.parsed.value } : {});

/**
 * The filter editor: a monospace JSON textarea, its JSON message, the API's
 * 400 about the filter (`apiError`, when it is one), and "Test against a
 * recent capture" on one of the endpoint's newest captures.
 */
export function FilterEditor({ idPrefix, field, endpointId, apiError }) {
  const id = idPrefix + '-filter';
  const jsonProblem = field.touched && !field.parsed.ok ? field.parsed.message : '';
  const shownApiError = isFilterError(apiError) ? apiError : null;
  const describedBy = [id + '-hint', jsonProblem ? id + '-json' : null, shownApiError ? id + '-error' : null].filter(Boolean).join(' ');
  return html`<fieldset class="filter-editor">
    <legend>Filter</legend>
    <${Field} id=${id} label="Filter (JSON)" hint='Empty: forward every capture. Else any of headers, path, query, body, e.g. {"body": {"type": {"$startsWith": "invoice."}}}. See docs/routing.md.'>
      <textarea id=${id} class="mono" rows="6" spellcheck="false" autocomplete="off" aria-describedby=${describedBy}
        aria-invalid=${jsonProblem || shownApiError ? 'true' : undefined}
        value=${field.text} onInput=${(e) => field.setText(e.currentTarget.value)} onBlur=${field.touch}></textarea>
    <//>
    ${jsonProblem ? html`<p class="error" id=${id + '-json'}>${jsonProblem}</p>` : null}
    ${shownApiError ? html`<p class="error" role="alert" id=${id + '-error'}>${shownApiError.message}</p>` : null}
    <${FilterTest} id=${id} field=${field} endpointId=${endpointId} />
  </fieldset>`;
}

function captureLabel(r) {
  return `${r.method} ${(r.path || '/') + (r.query ? '?' + r.query : '')} · ${timeAgo(r.received_at)}`;
}

/** Picks one of the endpoint's 20 newest captures (the newest first) and asks the API whether the filter matches it. */
function FilterTest({ id, field, endpointId }) {
  const recent = useLoad((signal) => api.get(`/endpoints/${endpointId}/requests?limit=20`, { signal }).then((r) => r.data.data), [endpointId]);
  const [chosen, setChosen] = useState('');
  const [result, setResult] = useState(null);
  const action = useAction();
  const captures = recent.data ?? [];
  const captureId = chosen || captures[0]?.id || '';
  const test = () => {
    setResult(null);
    field.touch();
    if (!field.parsed.ok || !captureId) return;
    action.run(async () => {
      setResult((await api.post(`/requests/${captureId}/filter-test`, { filter: field.parsed.value })).data);
    });
  };
  return html`<div class="filter-test">
    ${recent.error ? html`<${ErrorNote} error=${recent.error} />` : null}
    ${recent.data && captures.length === 0
      ? html`<p class="muted small">No captures on this endpoint yet to test the filter against.</p>`
      : html`<${Field} id=${id + '-capture'} label="Recent capture">
          <select id=${id + '-capture'} value=${captureId} onChange=${(e) => (setChosen(e.currentTarget.value), setResult(null))}>
            ${captures.map((r, i) => html`<option value=${r.id}>${i === 0 ? 'Newest: ' : ''}${captureLabel(r)}</option>`)}
          </select>
        <//>
        <div class="actions">
          <button type="button" aria-disabled=${action.busy || !captureId ? 'true' : undefined} onClick=${test}>Test the filter against a recent capture</button>
        </div>`}
    <p role="status" class="filter-result" id=${id + '-result'} data-matches=${result ? String(result.matches) : undefined}>
      ${result
        ? result.matches
          ? html`<span class="ok">Matches: this capture would be forwarded.</span>`
          : html`<span>Does not match: </span><code>${result.reason}</code>`
        : ''}
    </p>
    <${ErrorNote} error=${action.error} id=${id + '-test-error'} />
  </div>`;
}

// ---- badges ----

/** A forward the destination's filter left out: its badge and the rule that failed. */
export function FilteredReason({ f }) {
  if (f.status !== 'filtered') return null;
  return html`<p class="filter-reason" data-filter-reason>Not sent: the destination's filter left it out${f.filter_reason ? html` (<code>${f.filter_reason}</code>)` : null}.</p>`;
}

/** A duplicate capture's badge in the list (no link there: the row is a link itself). */
export function DuplicateBadge({ r }) {
  if (!r.duplicate_of) return null;
  return html`<span class="badge muted" data-duplicate title=${`Duplicate of ${r.duplicate_of}: stored, not forwarded`}>duplicate</span>`;
}

/** A duplicate capture's line in the detail, linking to the first capture of its key. */
export function DuplicateOf({ r }) {
  if (!r.duplicate_of) return null;
  return html`<dt>Duplicate</dt>
    <dd><span class="badge muted" data-duplicate>duplicate</span> of <a href=${`/endpoints/${r.endpoint_id}/requests/${r.duplicate_of}`} data-duplicate-of>the first capture</a>${' '}
      <span class="muted">(stored and acknowledged, not forwarded)</span></dd>`;
}

// ---- deduplication settings ----

function dedupForm(d) {
  const key = d?.key;
  return {
    mode: !d ? '' : key === 'body' ? 'body' : key?.header !== undefined ? 'header' : 'body_path',
    window: String(d?.window_seconds ?? 300),
    header: key?.header ?? 'Idempotency-Key',
    body_path: key?.body_path ?? 'id',
  };
}

/** "300" → 300; anything else goes as typed, for the API to refuse with its message. */
const windowValue = (text) => (/^-?\d+$/.test(text.trim()) ? Number(text.trim()) : text);

/** An endpoint's deduplication: off, or a window and a key, saved with PATCH /v1/endpoints/:id. */
export function DeduplicationSettings({ endpoint, mayEdit, onSaved }) {
  const [v, setV] = useState(dedupForm(endpoint.deduplication));
  const [saved, setSaved] = useState('');
  const action = useAction();
  const set = fieldSetter(setV, () => setSaved(''));
  const submit = (e) => {
    e.preventDefault();
    setSaved('');
    const key = v.mode === 'body' ? 'body' : v.mode === 'header' ? { header: v.header.trim() } : { body_path: v.body_path.trim() };
    const deduplication = v.mode ? { window_seconds: windowValue(v.window), key } : null;
    action.run(async () => {
      const updated = (await api.patch(`/endpoints/${endpoint.id}`, { deduplication })).data;
      onSaved(updated);
      setV(dedupForm(updated.deduplication));
      setSaved('Saved.');
    });
  };
  return html`<section aria-labelledby="dedup-heading">
    <h2 id="dedup-heading">Deduplication</h2>
    <p class="muted">A copy whose key was first seen within the window is still stored and acknowledged (the provider does not retry it), marked as a duplicate of the first, and not forwarded. See docs/routing.md.</p>
    <form onSubmit=${submit} noValidate>
      <fieldset disabled=${!mayEdit} class="plain">
        <legend class="visually-hidden">Deduplication</legend>
        <${Field} id="dedup-mode" label="Duplicates are recognised by">
          <select id="dedup-mode" value=${v.mode} onChange=${set('mode')}>
            <option value="">Off (no deduplication)</option>
            <option value="body">The exact body</option>
            <option value="header">A header's value</option>
            <option value="body_path">A field of the JSON body</option>
          </select>
        <//>
        ${v.mode
          ? html`
            <${Field} id="dedup-window" label="Window (seconds)" hint="1-3600, counted from the first capture of a key.">
              <input id="dedup-window" type="number" min="1" max="3600" inputmode="numeric" aria-describedby="dedup-window-hint" value=${v.window} onInput=${set('window')} />
            <//>
            ${v.mode === 'header'
              ? html`<${Field} id="dedup-header" label="Header name" hint="e.g. Idempotency-Key, X-GitHub-Delivery, X-Shopify-Webhook-Id.">
                  <input id="dedup-header" aria-describedby="dedup-header-hint" value=${v.header} onInput=${set('header')} />
                <//>`
              : null}
            ${v.mode === 'body_path'
              ? html`<${Field} id="dedup-path" label="Body path" hint='A dotted path into the JSON body, e.g. "id" (Stripe) or "data.object.id".'>
                  <input id="dedup-path" class="mono" aria-describedby="dedup-path-hint" value=${v.body_path} onInput=${set('body_path')} />
                <//>`
              : null}`
          : null}
      </fieldset>
      <div class="actions">
        <button type="submit" disabled=${!mayEdit || action.busy}>${action.busy ? 'Saving…' : 'Save deduplication'}</button>
        <span class="ok" role="status">${saved}</span>
      </div>
      <${ErrorNote} error=${action.error} id="dedup-error" />
    </form>
  </section>`;
}
