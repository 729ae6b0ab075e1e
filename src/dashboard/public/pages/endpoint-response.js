// An endpoint's custom ingest answer (docs/endpoints.md, "Custom ingest
// response"): the status, headers and body its captures are answered with,
// to see how a provider retries. The API checks every rule (hop-by-hop
// headers, 64 KB bodies...) and its 400 message is shown as it is.
import { api } from '../lib/api.js';
import { html, useState } from '../lib/html.js';
import { fieldSetter, useAction } from '../lib/hooks.js';
import { ErrorNote, Field } from '../lib/ui.js';

function formOf(response) {
  return {
    custom: response !== null,
    status: String(response?.status ?? 503),
    headers: Object.entries(response?.headers ?? {}).map(([k, v]) => `${k}: ${v}`).join('\n'),
    body: response?.body ?? '',
  };
}

/** "Name: value" lines to an object; a line without a colon is left for the API to refuse by name. */
function headersOf(text) {
  const out = {};
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    const i = line.indexOf(':');
    if (i < 0) out[line.trim()] = '';
    else out[line.slice(0, i).trim()] = line.slice(i + 1).trim();
  }
  return out;
}

export function IngestResponseSettings({ endpoint, mayEdit, onSaved }) {
  const [values, setValues] = useState(formOf(endpoint.response));
  const [saved, setSaved] = useState('');
  const action = useAction();
  const set = fieldSetter(setValues, () => setSaved(''));
  const submit = (e) => {
    e.preventDefault();
    setSaved('');
    action.run(async () => {
      const response = values.custom ? { status: Number(values.status), headers: headersOf(values.headers), body: values.body } : null;
      const updated = (await api.patch(`/endpoints/${endpoint.id}`, { response })).data;
      onSaved(updated);
      setValues(formOf(updated.response));
      setSaved('Saved.');
    });
  };
  return html`<section aria-labelledby="response-heading">
    <h2 id="response-heading">Ingest response</h2>
    <p class="muted">By default a capture is answered 200 with its request id. Answer with your own status, headers and body to see how the provider retries; every request is still captured first.</p>
    <form onSubmit=${submit}>
      <fieldset disabled=${!mayEdit} class="plain">
        <legend class="visually-hidden">Ingest response</legend>
        <div class="field">
          <label><input type="checkbox" id="response-custom" checked=${values.custom} onChange=${set('custom')} /> Answer captures with a custom response</label>
        </div>
        ${values.custom
          ? html`
            <${Field} id="response-status" label="Status" hint="200-599, e.g. 503 to make the provider retry or 410 to make it stop.">
              <input id="response-status" type="number" min="200" max="599" required aria-describedby="response-status-hint" value=${values.status} onInput=${set('status')} />
            <//>
            <${Field} id="response-headers" label="Headers (one per line, Header: value)" hint="Hop-by-hop headers such as Connection or Transfer-Encoding, and Content-Length, are refused.">
              <textarea id="response-headers" rows="3" aria-describedby="response-headers-hint" placeholder="Retry-After: 120" value=${values.headers} onInput=${set('headers')}></textarea>
            <//>
            <${Field} id="response-body" label="Body (optional)" hint="At most 64 KB.">
              <textarea id="response-body" rows="4" aria-describedby="response-body-hint" value=${values.body} onInput=${set('body')}></textarea>
            <//>`
          : null}
      </fieldset>
      <div class="actions">
        <button type="submit" disabled=${!mayEdit || action.busy}>${action.busy ? 'Saving…' : 'Save response'}</button>
        <span class="ok" role="status">${saved}</span>
      </div>
      <${ErrorNote} error=${action.error} id="response-error" />
    </form>
  </section>`;
}
