// Subscriptions: the organization's REST-hook subscriptions (signed events to
// an HTTPS URL, docs/subscriptions.md). Create with the signing secret shown
// once, rotate it (the old one keeps signing for 24 hours), delete, the
// failing / unsubscribed flags, each one's recent deliveries, and what an
// event looks like.
import { api, getAll } from '../lib/api.js';
import { formatTime, plural, timeAgo } from '../lib/format.js';
import { html, useState } from '../lib/html.js';
import { useAction, useLoad, usePoll } from '../lib/hooks.js';
import { can, useMe } from '../lib/session.js';
import { Badge, ConfirmButton, Empty, ErrorNote, Field, Loading, OneTimeSecret, Page } from '../lib/ui.js';

/** The six event types POST /v1/subscriptions accepts (src/subscriptions/event-types.ts), with what each announces. */
export const EVENT_TYPES = [
  ['request.captured', 'a request was captured'],
  ['request.forward_failed', 'a forward failed for good'],
  ['incident.opened', 'an incident opened or recurred'],
  ['incident.updated', 'an incident changed status or cause, or got a note'],
  ['incident.resolved', 'an incident was resolved'],
  ['replay.completed', 'an incident replay finished'],
];
/** The types an endpoint narrows; the others are the organization's whatever the endpoint. */
const ENDPOINT_EVENTS = ['request.captured', 'request.forward_failed'];

const STATUS_TONE = { active: 'ok', failing: 'bad', unsubscribed: 'warn' };
const EVENT_TONE = { succeeded: 'ok', failed: 'bad', dead: 'bad', pending: 'warn', in_flight: 'muted' };

const SECRET_NOTE = 'Shown only this once: copy it now. Receivers verify each event with it (Standard Webhooks).';

export function SubscriptionsPage() {
  const me = useMe();
  const mayManage = can(me, 'subscriptions.manage', 'subscriptions:write');
  const list = useLoad(() => getAll('/subscriptions'), []);
  // the failing flag and the deliveries change by themselves: keep the list fresh
  usePoll(list.reload, 5000, []);
  // names for the endpoint column and the picker; a key that may not read endpoints sees ids
  const endpoints = useLoad(() => api.get('/endpoints').then((r) => r.data).catch(() => []), []);
  const [secret, setSecret] = useState(null);
  const endpointName = (id) => (id ? endpoints.data?.find((e) => e.id === id)?.name ?? id : 'All endpoints');

  return html`<${Page} title="Subscriptions">
    <p class="muted">Weir POSTs a signed event to each subscription's HTTPS URL when something happens
      (the REST Hook pattern Zapier and Make use). A target that answers <code>410 Gone</code> unsubscribes itself.</p>
    ${secret ? html`<${OneTimeSecret} label=${secret.label} value=${secret.value} note=${secret.note} />` : null}
    <section aria-labelledby="subs-list">
      <h2 id="subs-list">Subscriptions</h2>
      ${list.error ? html`<${ErrorNote} error=${list.error} />` : null}
      ${!list.data ? (list.error ? null : html`<${Loading} />`)
        : list.data.length === 0 ? html`<${Empty}>No subscriptions yet.<//>`
        : html`<ul class="cards" aria-label="Subscriptions">
            ${list.data.map((s) => html`<${SubscriptionCard} key=${s.id} sub=${s} endpointName=${endpointName} mayManage=${mayManage}
              onSecret=${setSecret} onDeleted=${() => list.setData((d) => d.filter((x) => x.id !== s.id))} />`)}
          </ul>`}
    </section>
    ${mayManage
      ? html`<${NewSubscription} endpoints=${endpoints.data ?? []} onCreated=${(s) => {
          setSecret({ label: `Signing secret for ${s.target_url}`, value: s.secret, note: SECRET_NOTE });
          list.reload();
        }} />`
      : html`<p class="muted">Your key can list subscriptions but not create or delete them (that needs the scope
          <code>subscriptions:write</code> and a role of developer or above).</p>`}
    <${SamplePayloads} endpoints=${endpoints.data ?? []} />
  <//>`;
}

function NewSubscription({ endpoints, onCreated }) {
  const [url, setUrl] = useState('');
  const [types, setTypes] = useState([]);
  const [endpointId, setEndpointId] = useState('');
  const action = useAction();
  const toggle = (t, on) => setTypes((cur) => (on ? [...cur, t] : cur.filter((x) => x !== t)));
  const submit = (e) => {
    e.preventDefault();
    action.run(async () => {
      // keep the API's order, whatever order the boxes were ticked in
      const eventTypes = EVENT_TYPES.map(([t]) => t).filter((t) => types.includes(t));
      const created = (await api.post('/subscriptions', { target_url: url.trim(), event_types: eventTypes, ...(endpointId ? { endpoint_id: endpointId } : {}) })).data;
      setUrl('');
      setTypes([]);
      setEndpointId('');
      onCreated(created);
    });
  };
  return html`<section aria-labelledby="subs-new">
    <h2 id="subs-new">New subscription</h2>
    <form onSubmit=${submit} class="panel">
      <${Field} id="sub-url" label="Target URL" hint="https:// only. Weir signs every event it sends there.">
        <input id="sub-url" type="url" required placeholder="https://hooks.example.com/weir" aria-describedby="sub-url-hint"
          value=${url} onInput=${(e) => setUrl(e.currentTarget.value)} />
      <//>
      <fieldset>
        <legend>Event types</legend>
        <div class="checks">
          ${EVENT_TYPES.map(([t, what]) => html`<label class="check" key=${t}>
            <input type="checkbox" name="event_types" value=${t} checked=${types.includes(t)} onChange=${(e) => toggle(t, e.currentTarget.checked)} />
            <span><code>${t}</code> <span class="muted">${what}</span></span>
          </label>`)}
        </div>
      </fieldset>
      <${Field} id="sub-endpoint" label="Endpoint" hint="Narrows request.* events to one endpoint; incident and replay events are the organization's either way.">
        <select id="sub-endpoint" aria-describedby="sub-endpoint-hint" value=${endpointId} onChange=${(e) => setEndpointId(e.currentTarget.value)}>
          <option value="">All endpoints (also those created later)</option>
          ${endpoints.map((e) => html`<option value=${e.id} key=${e.id}>${e.name}</option>`)}
        </select>
      <//>
      <div class="actions">
        <button type="submit" class="primary" disabled=${action.busy}>${action.busy ? 'Creating…' : 'Create subscription'}</button>
      </div>
      <${ErrorNote} error=${action.error} id="sub-error" />
    </form>
  </section>`;
}

function SubscriptionCard({ sub: s, endpointName, mayManage, onSecret, onDeleted }) {
  const rotate = useAction();
  const del = useAction();
  const [open, setOpen] = useState(false);
  const headingId = `sub-${s.id}`;
  const narrowed = s.endpoint_id && s.event_types.some((t) => ENDPOINT_EVENTS.includes(t));
  return html`<li class="panel card">
    <div class="card-head">
      <h3 id=${headingId} class="target">${s.target_url}</h3>
      <${Badge} tone=${STATUS_TONE[s.status] ?? 'muted'}>${s.status}<//>
    </div>
    <dl class="props">
      <dt>Events</dt><dd>${s.event_types.join(', ')}</dd>
      <dt>Endpoint</dt><dd>${endpointName(s.endpoint_id)}${narrowed ? '' : s.endpoint_id ? ' (no request.* event chosen: not narrowed)' : ''}</dd>
      ${s.status_reason ? html`<dt>Why</dt><dd class=${s.status === 'active' ? '' : 'bad'}>${s.status_reason}</dd>` : null}
      ${s.failing_since ? html`<dt>Failing since</dt><dd>${formatTime(s.failing_since)} (${plural(s.consecutive_failures, 'failed attempt')} in a row)</dd>` : null}
      <dt>Last delivered</dt><dd>${s.last_success_at ? timeAgo(s.last_success_at) : 'never'}${s.last_failure_at ? ` · last failure ${timeAgo(s.last_failure_at)}` : ''}</dd>
      ${s.previous_secret_expires_at ? html`<dt>Old secret</dt><dd>still signs until ${formatTime(s.previous_secret_expires_at)}</dd>` : null}
      <dt>Created</dt><dd>${formatTime(s.created_at)}</dd>
    </dl>
    <div class="actions">
      <button type="button" aria-expanded=${open ? 'true' : 'false'} aria-controls=${`deliveries-${s.id}`} onClick=${() => setOpen(!open)}>
        ${open ? 'Hide deliveries' : 'Recent deliveries'}
      </button>
      ${mayManage ? html`
        <${ConfirmButton} label="Rotate secret" confirmLabel="Rotate" busy=${rotate.busy}
          question="Make a new signing secret? The old one keeps signing for 24 hours."
          onConfirm=${() => rotate.run(async () => {
            const r = (await api.post(`/subscriptions/${s.id}/rotate-secret`)).data;
            onSecret({
              label: `New signing secret for ${s.target_url}`,
              value: r.secret,
              note: `Shown only this once: copy it now. For 24 hours (until ${formatTime(r.previous_secret_expires_at)}) every event carries two signatures, the new secret's and the old one's, so receivers keep verifying while you deploy the new secret.`,
            });
          })} />
        <${ConfirmButton} label="Delete" confirmLabel="Delete subscription" busy=${del.busy}
          question=${`Stop sending events to ${s.target_url}?`}
          onConfirm=${() => del.run(async () => {
            await api.del(`/subscriptions/${s.id}`);
            onDeleted();
          })} />` : null}
    </div>
    <${ErrorNote} error=${rotate.error || del.error} />
    ${open ? html`<${Deliveries} id=${`deliveries-${s.id}`} sub=${s} />` : null}
  </li>`;
}

/** The subscription's newest events and how their delivery went, refreshed while open. */
function Deliveries({ id, sub }) {
  const events = useLoad(() => api.get(`/subscriptions/${sub.id}/events?limit=10`).then((r) => r.data.data), [sub.id]);
  usePoll(events.reload, 3000, [sub.id]);
  return html`<div id=${id} class="deliveries">
    <h4>Recent deliveries</h4>
    ${events.error ? html`<${ErrorNote} error=${events.error} />` : null}
    ${!events.data ? (events.error ? null : html`<${Loading} />`)
      : events.data.length === 0 ? html`<${Empty}>No events yet: they appear here when something this subscription listens to happens.<//>`
      : html`<div class="table-wrap"><table>
          <caption class="sr-only">Recent deliveries to ${sub.target_url}</caption>
          <thead><tr><th scope="col">Event</th><th scope="col">Status</th><th scope="col">Attempts</th><th scope="col">Last answer</th><th scope="col">Created</th></tr></thead>
          <tbody>${events.data.map((e) => html`<tr key=${e.id}>
            <td><code>${e.type}</code><br /><span class="muted small">${e.webhook_id}</span></td>
            <td><${Badge} tone=${EVENT_TONE[e.status] ?? 'muted'}>${e.status}<//>${e.next_attempt_at ? html`<br /><span class="muted small">next try ${formatTime(e.next_attempt_at)}</span>` : null}</td>
            <td>${e.attempt_count}</td>
            <td>${e.last_status_code ?? ''}${e.last_error ? html` <span class="bad">${e.last_error}</span>` : null}</td>
            <td>${formatTime(e.created_at)}</td>
          </tr>`)}</tbody>
        </table></div>`}
  </div>`;
}

/** What an event's body looks like: request.captured for an endpoint's newest capture, incident.opened for the newest incident. */
function SamplePayloads({ endpoints }) {
  const [kind, setKind] = useState('request.captured');
  const [endpointId, setEndpointId] = useState('');
  const [sample, setSample] = useState(null);
  const action = useAction();
  const chosen = endpointId || endpoints[0]?.id || '';
  const show = (e) => {
    e.preventDefault();
    action.run(async () => {
      const r = kind === 'request.captured' ? await api.get(`/subscriptions/sample/${chosen}`) : await api.get('/incidents/sample');
      setSample(r.data);
    });
  };
  return html`<section aria-labelledby="subs-sample">
    <h2 id="subs-sample">Sample payload</h2>
    <p class="muted">The body an event would carry, built from your own newest capture or incident (or a fixed example when there is none yet).</p>
    <form class="inline" onSubmit=${show}>
      <${Field} id="sample-type" label="Event type">
        <select id="sample-type" value=${kind} onChange=${(e) => setKind(e.currentTarget.value)}>
          <option value="request.captured">request.captured</option>
          <option value="incident.opened">incident.opened</option>
        </select>
      <//>
      ${kind === 'request.captured' ? html`<${Field} id="sample-endpoint" label="Endpoint to sample">
        <select id="sample-endpoint" value=${chosen} onChange=${(e) => setEndpointId(e.currentTarget.value)}>
          ${endpoints.length === 0 ? html`<option value="">No endpoint yet</option>` : endpoints.map((e) => html`<option value=${e.id} key=${e.id}>${e.name}</option>`)}
        </select>
      <//>` : null}
      <button type="submit" disabled=${action.busy || (kind === 'request.captured' && !chosen)}>Show sample</button>
    </form>
    <${ErrorNote} error=${action.error} />
    ${sample ? html`<div>
      <p class="muted">${sample.sample ? 'A fixed example (nothing real to show yet).' : 'Built from real data.'}</p>
      <pre><code>${JSON.stringify(sample, null, 2)}</code></pre>
    </div>` : null}
  </section>`;
}
