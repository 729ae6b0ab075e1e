// The saved HTTPS destination library: the list (paged, with how many
// endpoints use each), creating one (optionally attached to an endpoint at
// once), and one destination with the endpoints it is attached to, edit,
// attach and delete. API: docs/destinations.md.
import { api } from '../lib/api.js';
import { emptySaved, SavedFields, visibilityLabel } from '../lib/destinations.js';
import { formatTime, plural } from '../lib/format.js';
import { html, useState } from '../lib/html.js';
import { useAction, useLoad } from '../lib/hooks.js';
import { beforeParam, PagerLinks } from '../lib/pager.js';
import { navigate } from '../lib/router.js';
import { can, useMe } from '../lib/session.js';
import { Badge, ConfirmButton, Empty, ErrorNote, Field, Loading, Page, PendingPage } from '../lib/ui.js';

/** The organization's endpoints, for the "attach to" pickers. */
const loadEndpoints = (signal) => api.get('/endpoints', { signal }).then((r) => r.data);

export function DestinationsPage({ query }) {
  const me = useMe();
  const before = beforeParam(query);
  const list = useLoad((signal) => api.get(`/destinations?limit=25${before}`, { signal }).then((r) => r.data), [before]);
  const canWrite = can(me, 'endpoints.edit', 'destinations:write');
  return html`<${Page} title="Destinations">
    <p class="muted">Saved HTTPS destinations your team can attach to endpoints. An endpoint's own forward destinations
      (including agents) and their retry and rate settings are on the endpoint's Destinations tab.</p>
    ${canWrite ? html`<${CreateDestination} onCreated=${list.reload} />` : null}
    <h2>Library</h2>
    ${list.error ? html`<${ErrorNote} error=${list.error} />` : null}
    ${!list.data
      ? list.error ? null : html`<${Loading} />`
      : list.data.data.length === 0
        ? html`<${Empty}>No saved destinations yet.<//>`
        : html`<div class="table-wrap" role="region" aria-label="Saved destinations" tabindex="0">
            <table class="destinations cards">
              <thead><tr><th scope="col">Name</th><th scope="col">URL</th><th scope="col">Visibility</th><th scope="col">Reusable</th><th scope="col">Endpoints</th></tr></thead>
              <tbody>${list.data.data.map((d) => html`<tr key=${d.id}>
                <td data-label="Name"><a href=${'/destinations/' + d.id}>${d.name}</a></td>
                <td data-label="URL"><code>${d.url}</code></td>
                <td data-label="Visibility">${visibilityLabel(d.visibility)}</td>
                <td data-label="Reusable">${d.is_reusable ? 'yes' : 'one endpoint only'}</td>
                <td data-label="Endpoints">${d.endpoint_count}</td>
              </tr>`)}</tbody>
            </table>
          </div>
          <${PagerLinks} path="/destinations" query=${query} meta=${list.data.meta} label="Destination pages" />`}
  <//>`;
}

function CreateDestination({ onCreated }) {
  const endpoints = useLoad(loadEndpoints, []);
  const [value, setValue] = useState(emptySaved());
  const [endpointId, setEndpointId] = useState('');
  const [created, setCreated] = useState(null);
  const action = useAction();
  const submit = (e) => {
    e.preventDefault();
    setCreated(null);
    action.run(async () => {
      const body = { ...value, name: value.name.trim(), url: value.url.trim(), ...(endpointId ? { endpoint_id: endpointId } : {}) };
      const r = await api.post('/destinations', body);
      setCreated({ ...r, endpoint: endpoints.data?.find((x) => x.id === endpointId) });
      setValue(emptySaved());
      setEndpointId('');
      onCreated();
    });
  };
  return html`<section class="panel" aria-labelledby="new-dest-h">
    <h2 id="new-dest-h">Save a destination</h2>
    <form class="ops-form" id="new-destination" onSubmit=${submit}>
      <${SavedFields} prefix="new-dest" value=${value} onChange=${setValue} />
      <${Field} id="new-dest-endpoint" label="Also attach it to (optional)">
        <select id="new-dest-endpoint" value=${endpointId} onChange=${(e) => setEndpointId(e.currentTarget.value)}>
          <option value="">No endpoint</option>
          ${(endpoints.data ?? []).map((ep) => html`<option value=${ep.id}>${ep.name}</option>`)}
        </select>
      <//>
      <${ErrorNote} error=${endpoints.error} />
      <div><button type="submit" class="primary" aria-disabled=${action.busy ? 'true' : undefined}>${action.busy ? 'Saving…' : 'Save destination'}</button></div>
      <${ErrorNote} error=${action.error} id="new-dest-error" />
      ${created ? html`<${CreatedNote} created=${created} />` : null}
    </form>
  </section>`;
}

/** What a 201 said: saved, and attached or not (attachment_error: the destination was still saved). */
function CreatedNote({ created }) {
  const d = created.data;
  const link = html`<a href=${'/destinations/' + d.id}>${d.name}</a>`;
  if (created.attachment_error) {
    return html`<p class="notice" role="alert" id="attachment-error">Saved ${link} to the library, but it was not attached to
      ${created.endpoint ? ` ${created.endpoint.name}` : ' the endpoint'}: ${created.attachment_error.message}</p>`;
  }
  return html`<p class="ok" role="status">Saved ${link}${created.endpoint ? ` and attached it to ${created.endpoint.name}` : ''}.</p>`;
}

export function DestinationPage({ params }) {
  const me = useMe();
  const dest = useLoad((signal) => api.get(`/destinations/${params.id}`, { signal }).then((r) => r.data), [params.id]);
  const canWrite = can(me, 'endpoints.edit', 'destinations:write');
  const remove = useAction();
  if (!dest.data) return html`<${PendingPage} title="Destination" back="/destinations" backLabel="All destinations" load=${dest} />`;
  const d = dest.data;
  const del = () =>
    remove.run(async () => {
      await api.del(`/destinations/${d.id}`);
      navigate('/destinations');
    });
  return html`<${Page} title=${d.name}
    actions=${canWrite ? html`<${ConfirmButton} label="Delete" confirmLabel="Delete from the library"
      question="Its attachments keep forwarding, as stand-alone destinations. Delete it?" busy=${remove.busy} onConfirm=${del} />` : null}>
    <p><a href="/destinations">All destinations</a></p>
    <${ErrorNote} error=${remove.error} />
    <dl class="props">
      <dt>URL</dt><dd><code>${d.url}</code></dd>
      <dt>Visibility</dt><dd>${visibilityLabel(d.visibility)}</dd>
      <dt>Reusable</dt><dd>${d.is_reusable ? 'yes: may be attached to any number of endpoints' : 'no: serves the one endpoint it was first attached to'}</dd>
      <dt>Created</dt><dd>${formatTime(d.created_at)}</dd>
    </dl>
    <h2>Attached to ${plural(d.endpoints.length, 'endpoint')}</h2>
    ${d.endpoints.length === 0
      ? html`<${Empty}>Not attached to any endpoint.<//>`
      : html`<ul class="attached">${d.endpoints.map((a) => html`<li key=${a.forward_destination_id}>
          <a href=${`/endpoints/${a.endpoint_id}/destinations`}>${a.endpoint_name}</a></li>`)}</ul>`}
    ${canWrite
      ? html`<${AttachForm} key=${'attach-' + d.id} destination=${d} onAttached=${dest.reload} />
        <${EditDestination} key=${'edit-' + d.id} destination=${d} onSaved=${(next) => dest.setData(next)} />`
      : null}
  <//>`;
}

function AttachForm({ destination: d, onAttached }) {
  const endpoints = useLoad(loadEndpoints, []);
  const [endpointId, setEndpointId] = useState('');
  const [done, setDone] = useState('');
  const action = useAction();
  const attachedIds = new Set(d.endpoints.map((a) => a.endpoint_id));
  const choices = (endpoints.data ?? []).filter((ep) => !attachedIds.has(ep.id));
  const submit = (e) => {
    e.preventDefault();
    setDone('');
    action.run(async () => {
      await api.post(`/endpoints/${endpointId}/destinations`, { destination_id: d.id });
      setDone(`Attached to ${choices.find((ep) => ep.id === endpointId)?.name ?? 'the endpoint'}.`);
      setEndpointId('');
      onAttached();
    });
  };
  return html`<section class="panel" aria-labelledby="attach-h">
    <h2 id="attach-h">Attach to an endpoint</h2>
    ${!d.is_reusable && d.endpoints.length > 0 ? html`<p class="muted">This destination is not reusable: it serves its one endpoint.</p>` : null}
    <form class="inline ops-inline" onSubmit=${submit}>
      <${Field} id="attach-endpoint" label="Endpoint">
        <select id="attach-endpoint" required value=${endpointId} onChange=${(e) => setEndpointId(e.currentTarget.value)}>
          <option value="">Choose an endpoint</option>
          ${choices.map((ep) => html`<option value=${ep.id}>${ep.name}</option>`)}
        </select>
      <//>
      <button type="submit" aria-disabled=${action.busy ? 'true' : undefined}>Attach</button>
    </form>
    <${ErrorNote} error=${action.error ?? endpoints.error} id="attach-error" />
    ${done ? html`<p class="ok" role="status">${done}</p>` : null}
  </section>`;
}

function EditDestination({ destination: d, onSaved }) {
  const [value, setValue] = useState({ name: d.name, url: d.url, visibility: d.visibility, is_reusable: d.is_reusable });
  const [saved, setSaved] = useState(false);
  const action = useAction();
  const submit = (e) => {
    e.preventDefault();
    setSaved(false);
    action.run(async () => {
      const r = await api.patch(`/destinations/${d.id}`, { ...value, name: value.name.trim(), url: value.url.trim() });
      onSaved(r.data);
      setSaved(true);
    });
  };
  return html`<section class="panel" aria-labelledby="edit-dest-h">
    <h2 id="edit-dest-h">Edit</h2>
    <form class="ops-form" id="edit-destination" onSubmit=${submit}>
      <${SavedFields} prefix="edit-dest" value=${value} onChange=${(v) => (setValue(v), setSaved(false))} />
      <p class="hint">A new URL is carried to every endpoint this destination is attached to. Deliveries already queued keep the old one.</p>
      <div><button type="submit" class="primary" aria-disabled=${action.busy ? 'true' : undefined}>Save changes</button>
        <span class="ok" role="status">${saved ? ' Saved.' : ''}</span></div>
      <${ErrorNote} error=${action.error} id="edit-dest-error" />
    </form>
  </section>`;
}
