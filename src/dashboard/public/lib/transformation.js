// A destination's transformation on its forms (create and edit): the code in
// a monospace textarea, the API's compile error (line and column) beside it,
// and "Test the code against a recent capture", which runs the code on one of the
// endpoint's captures (POST /v1/requests/:id/transform-test, nothing sent)
// and shows what would be sent next to what arrived. API:
// docs/transformations.md.
import { api } from './api.js';
import { formatTime } from './format.js';
import { html, useState } from './html.js';
import { useAction, useLoad } from './hooks.js';
import { ErrorNote, Loading } from './ui.js';

/** The API value of the textarea's text: empty (blank) clears the transformation. */
export const transformationValue = (text) => (text.trim() === '' ? null : { code: text });

/** Whether an API error is about the transformation's code (shown at the editor, not under the form). */
export const isTransformationError = (err) => !!err && /transformation/i.test(err.message ?? '');

const EXAMPLE = 'function handler(request, context) {\n  return request;\n}';

/**
 * The editor. `value` is the code ('' for none); `error` an API error about it
 * (a save refused with line and column); `endpointId` picks the captures to
 * test against; `destinationId` is passed to the handler as context.destination_id.
 */
export function TransformationField({ id, value, onChange, error, endpointId, destinationId = null }) {
  return html`<fieldset class="transformation">
    <legend>Transformation</legend>
    <label for=${id}>Code (JavaScript)</label>
    <textarea id=${id} class="code" rows="8" spellcheck="false" autocapitalize="off" autocomplete="off" wrap="off"
      aria-describedby=${id + '-hint'} aria-invalid=${error ? 'true' : undefined} aria-errormessage=${error ? id + '-error' : undefined}
      placeholder=${EXAMPLE} value=${value} onInput=${(e) => onChange(e.currentTarget.value)}></textarea>
    <small class="hint" id=${id + '-hint'}>Defines <code>function handler(request, context)</code>, which returns the request to send
      (<code>method</code>, <code>path</code>, <code>query</code>, <code>headers</code>, <code>body</code>) or <code>null</code> not to forward it.
      Empty: forward what arrived. Runs in a sandbox, 50 ms and 16 MB a run by default.</small>
    <${ErrorNote} error=${error} id=${id + '-error'} />
    <${TestPanel} id=${id + '-test'} code=${value} endpointId=${endpointId} destinationId=${destinationId} />
  </fieldset>`;
}

/** "Test the code against a recent capture": the picker and the run are only made when opened. */
function TestPanel({ id, code, endpointId, destinationId }) {
  const [open, setOpen] = useState(false);
  return html`<details class="transform-test" onToggle=${(e) => setOpen(e.currentTarget.open)}>
    <summary>Test the code against a recent capture</summary>
    ${open ? html`<${TestRun} id=${id} code=${code} endpointId=${endpointId} destinationId=${destinationId} />` : null}
  </details>`;
}

function TestRun({ id, code, endpointId, destinationId }) {
  const captures = useLoad((signal) => api.get(`/endpoints/${endpointId}/requests?limit=20`, { signal }).then((r) => r.data.data), [endpointId]);
  const [picked, setPicked] = useState('');
  const [result, setResult] = useState(null);
  const action = useAction();
  const run = () =>
    action.run(async () => {
      setResult(null);
      const requestId = picked || captures.data?.[0]?.id;
      if (!requestId) throw new Error('This endpoint has no captures yet: send it a webhook first.');
      const [original, tested] = await Promise.all([
        api.get(`/requests/${requestId}`).then((r) => r.data),
        api.post(`/requests/${requestId}/transform-test`, { code, ...(destinationId ? { destination_id: destinationId } : {}) }).catch((err) => ({ error: err })),
      ]);
      setResult({ original, tested });
    });
  if (captures.error) return html`<${ErrorNote} error=${captures.error} />`;
  if (!captures.data) return html`<${Loading} label="Loading recent captures…" />`;
  if (captures.data.length === 0) return html`<p class="muted">This endpoint has no captures yet: send it a webhook, then test the code against it.</p>`;
  const tested = result?.tested;
  return html`<div class="transform-run">
    <div class="field">
      <label for=${id + '-capture'}>Capture</label>
      <select id=${id + '-capture'} value=${picked} onChange=${(e) => setPicked(e.currentTarget.value)}>
        <option value="">The newest (${captureLabel(captures.data[0])})</option>
        ${captures.data.map((c) => html`<option value=${c.id}>${captureLabel(c)}</option>`)}
      </select>
    </div>
    <div class="actions">
      <button type="button" aria-disabled=${action.busy || code.trim() === '' ? 'true' : undefined}
        onClick=${() => code.trim() !== '' && run()}>${action.busy ? 'Running…' : 'Run the code on it'}</button>
      ${code.trim() === '' ? html`<span class="muted small">Write some code first.</span>` : null}
    </div>
    <${ErrorNote} error=${action.error} />
    <div aria-live="polite">
      ${tested?.error ? html`<p class="error" role="alert" data-transform-error>${tested.error.message}</p>` : null}
      ${tested && !tested.error
        ? html`<p class="muted small" data-transform-stats>Ran in ${tested.data.duration_ms} ms.</p>`
        : null}
      ${result
        ? html`<div class="transform-compare">
            <section aria-label="Original request"><h4>Original</h4><${Shown} r=${originalShape(result.original)} /></section>
            <section aria-label="Transformed request"><h4>Transformed</h4>
              ${tested.error
                ? html`<p class="muted">Not sent: the run failed (above).</p>`
                : tested.data.request === null
                  ? html`<p class="notice">The handler returned <code>null</code>: this capture would not be forwarded (skipped).</p>`
                  : html`<${Shown} r=${tested.data.request} />`}
            </section>
          </div>`
        : null}
      ${tested && !tested.error
        ? html`<h4>Logs</h4>
            ${tested.data.logs.length === 0
              ? html`<p class="muted small">No console.log output.</p>`
              : html`<pre class="body" aria-label="console.log output" data-transform-logs><code>${tested.data.logs.join('\n')}</code></pre>`}`
        : null}
    </div>
  </div>`;
}

const captureLabel = (c) => `${c.method} ${(c.path || '/') + (c.query ? '?' + c.query : '')} · ${formatTime(c.received_at)}`;

/** A stored capture (GET /v1/requests/:id) in the handler's shape: lower-case header names, a JSON body parsed. */
function originalShape(r) {
  const headers = {};
  for (const h of r.headers) {
    const name = h.name.toLowerCase();
    headers[name] = name in headers ? `${headers[name]}, ${h.value}` : h.value;
  }
  let body = r.body_encoding === 'utf8' ? r.body : null;
  if (body !== null && /^application\/(.+\+)?json\b|\+json\b/i.test(r.content_type ?? '')) {
    try {
      body = JSON.parse(body);
    } catch {
      // not valid JSON after all: shown as text, as the handler would get it
    }
  }
  return { method: r.method, path: r.path, query: r.query, headers, body, ...(r.body_encoding === 'base64' ? { body_base64: r.body } : {}) };
}

function bodyText(r) {
  if (r.body === null || r.body === undefined) return r.body_base64 ? `(binary, ${Math.floor((r.body_base64.length * 3) / 4)} bytes)` : '(empty)';
  return typeof r.body === 'string' ? r.body : JSON.stringify(r.body, null, 2);
}

function queryText(q) {
  if (typeof q === 'string') return q;
  return new URLSearchParams(q ?? {}).toString();
}

/** One side of the comparison: method, path, query, headers, body. */
function Shown({ r }) {
  const headers = Object.entries(r.headers ?? {});
  return html`<dl class="props small-props">
      <dt>Method</dt><dd><code data-field="method">${r.method}</code></dd>
      <dt>Path</dt><dd><code data-field="path">${r.path || '(none)'}</code></dd>
      <dt>Query</dt><dd><code data-field="query">${queryText(r.query) || '(none)'}</code></dd>
    </dl>
    <div class="table-wrap"><table class="headers-table">
      <caption class="sr-only">Headers</caption>
      <thead><tr><th scope="col">Header</th><th scope="col">Value</th></tr></thead>
      <tbody>${headers.map(([k, v]) => html`<tr><td><code>${k}</code></td><td><code>${Array.isArray(v) ? v.join(', ') : String(v)}</code></td></tr>`)}</tbody>
    </table></div>
    <pre class="body" data-field="body"><code>${bodyText(r)}</code></pre>`;
}
