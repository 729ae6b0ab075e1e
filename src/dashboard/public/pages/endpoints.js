// The organization's endpoints: the list (each row links to its page), and
// the form that creates one. A new endpoint opens at once, ready for its
// first capture.
import { api } from '../lib/api.js';
import { formatTime } from '../lib/format.js';
import { html, useState } from '../lib/html.js';
import { useAction, useLoad, usePoll } from '../lib/hooks.js';
import { navigate } from '../lib/router.js';
import { can, useMe } from '../lib/session.js';
import { Badge, CopyButton, ErrorNote, Field, Loading, Page } from '../lib/ui.js';

/** The name, description and forward URL inputs, shared by the create form and the endpoint's settings. */
export function EndpointFields({ prefix, values, onInput }) {
  const set = (k) => (e) => onInput({ ...values, [k]: e.currentTarget.value });
  return html`
    <${Field} id=${prefix + '-name'} label="Name">
      <input id=${prefix + '-name'} name="name" required maxlength="200" autocomplete="off" value=${values.name} onInput=${set('name')} />
    <//>
    <${Field} id=${prefix + '-description'} label="Description (optional)">
      <textarea id=${prefix + '-description'} name="description" rows="2" value=${values.description} onInput=${set('description')}></textarea>
    <//>
    <${Field} id=${prefix + '-forward'} label="Forward URL (optional)"
      hint="Every capture is also forwarded here. It must be https://; leave it empty to only capture.">
      <input id=${prefix + '-forward'} name="forward_url" inputmode="url" autocomplete="off" placeholder="https://example.com/webhooks"
        aria-describedby=${prefix + '-forward-hint'} value=${values.forward_url} onInput=${set('forward_url')} />
    <//>`;
}

function CreateEndpoint({ onCreated }) {
  const empty = { name: '', description: '', forward_url: '' };
  const [values, setValues] = useState(empty);
  const action = useAction();
  const submit = (e) => {
    e.preventDefault();
    action.run(async () => {
      const body = { name: values.name.trim() };
      if (values.description.trim()) body.description = values.description.trim();
      if (values.forward_url.trim()) body.forward_url = values.forward_url.trim();
      const created = (await api.post('/endpoints', body)).data;
      setValues(empty);
      onCreated(created);
    });
  };
  return html`<section class="panel" aria-labelledby="new-endpoint">
    <h2 id="new-endpoint">New endpoint</h2>
    <form onSubmit=${submit} aria-describedby=${action.error ? 'create-endpoint-error' : undefined}>
      <${EndpointFields} prefix="new-endpoint" values=${values} onInput=${setValues} />
      <div><button type="submit" class="primary" disabled=${action.busy}>${action.busy ? 'Creating…' : 'Create endpoint'}</button></div>
      <${ErrorNote} error=${action.error} id="create-endpoint-error" />
    </form>
  </section>`;
}

export function EndpointsPage() {
  const me = useMe();
  const list = useLoad((signal) => api.get('/endpoints', { signal }).then((r) => r.data), []);
  // another tab or a teammate may add or pause one
  usePoll(() => api.get('/endpoints').then((r) => list.setData(r.data)), 15000, []);
  const mayCreate = can(me, 'endpoints.create', 'endpoints:write');
  const items = list.data;
  return html`<${Page} title="Endpoints">
    <p class="muted lead">Each endpoint has an ingest URL: point a webhook sender at it and every request it sends is captured, shown live, and forwarded where you say.</p>
    ${list.error && !items ? html`<${ErrorNote} error=${list.error} />` : null}
    ${!items && !list.error ? html`<${Loading} />` : null}
    ${items && items.length === 0
      ? html`<div class="panel empty-state">
          <h2>No endpoints yet</h2>
          <p>${mayCreate
            ? 'Create one below. You get an ingest URL to paste into Stripe, GitHub or your own app (or to curl); its requests show up here as they arrive.'
            : 'Your key cannot create endpoints. Ask an admin to create one, or for a key with the endpoints:write scope.'}</p>
        </div>`
      : null}
    ${items && items.length > 0 ? html`<${EndpointTable} items=${items} />` : null}
    ${mayCreate ? html`<${CreateEndpoint} onCreated=${(ep) => navigate('/endpoints/' + ep.id)} />` : null}
  <//>`;
}

/**
 * Where an endpoint forwards: its forward_url and its forward destinations
 * (an agent's shown as its loopback port and path), so an endpoint that
 * forwards only through an agent does not read "none". A key that cannot
 * read destinations sees the forward_url alone.
 */
function ForwardsTo({ ep }) {
  const list = useLoad((signal) => api.get(`/endpoints/${ep.id}/destinations`, { signal }).then((r) => r.data.data), [ep.id]);
  const destinations = (list.data ?? []).filter((d) => d.enabled);
  if (!ep.forward_url && destinations.length === 0) return list.loading && !list.data ? html`<span class="muted">…</span>` : html`<span class="muted">none</span>`;
  return html`<ul class="forwards-to">
    ${ep.forward_url ? html`<li><code>${ep.forward_url}</code></li>` : null}
    ${destinations.map((d) =>
      d.destination_type === 'agent'
        ? html`<li key=${d.id}>${d.name} <span class="muted">(agent → 127.0.0.1:${d.target_port}${d.target_path ?? ''})</span></li>`
        : html`<li key=${d.id}>${d.name} <code>${d.url}</code></li>`,
    )}
  </ul>`;
}

function EndpointTable({ items }) {
  return html`<table class="endpoints-table">
    <caption class="visually-hidden">Endpoints</caption>
    <thead><tr><th scope="col">Name</th><th scope="col">Ingest URL</th><th scope="col">Forwards to</th><th scope="col">State</th><th scope="col">Created</th></tr></thead>
    <tbody>
      ${items.map(
        (ep) => html`<tr key=${ep.id}>
          <td data-label="Name"><a href=${'/endpoints/' + ep.id}>${ep.name}</a>${ep.description ? html`<div class="muted small">${ep.description}</div>` : null}</td>
          <td data-label="Ingest URL"><code>${ep.ingest_url}</code> <${CopyButton} text=${ep.ingest_url} name=${'Copy ingest URL of ' + ep.name} /></td>
          <td data-label="Forwards to"><${ForwardsTo} ep=${ep} /></td>
          <td data-label="State">${ep.paused ? html`<${Badge} tone="warn">paused<//>` : html`<${Badge} tone="ok">active<//>`}</td>
          <td data-label="Created">${formatTime(ep.created_at)}</td>
        </tr>`,
      )}
    </tbody>
  </table>`;
}
