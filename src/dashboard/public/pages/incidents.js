// Incidents: the list by status (kept in the URL, paged), and one incident
// with its cause, counts, timeline and failures; status changes, notes, and
// a paced replay with a rate picker that shows the estimated duration and
// refuses more than 12 hours, then follows the batch live (pause, resume,
// cancel). API: docs/incidents.md.
import { api } from '../lib/api.js';
import { formatDuration, formatTime, plural, shortId, timeAgo } from '../lib/format.js';
import { html, useState } from '../lib/html.js';
import { useAction, useLoad, usePoll } from '../lib/hooks.js';
import { beforeParam, PagerLinks } from '../lib/pager.js';
import { setQuery } from '../lib/router.js';
import { can, useMe } from '../lib/session.js';
import { Badge, ConfirmButton, Empty, ErrorNote, Field, Loading, Page, PendingPage } from '../lib/ui.js';

const FILTERS = [
  ['open', 'Open (incl. investigating)'],
  ['investigating', 'Investigating'],
  ['resolved', 'Resolved'],
  ['all', 'All'],
];
const STATUS_TONE = { open: 'bad', investigating: 'warn', resolved: 'ok' };
/** A failure's status (docs/incidents.md#failures). */
const FAILURE_TONE = { retrying: 'warn', failed: 'bad', replaying: 'muted', replay_failed: 'bad', recovered: 'ok' };
const STATUS_ACTIONS = [
  ['investigating', 'Mark investigating'],
  ['resolved', 'Resolve'],
  ['open', 'Reopen'],
];
const MIN_RATE = 1;
const MAX_RATE = 6000;
/** The API's cap on one replay batch (docs/incidents.md). */
const MAX_BATCH_MINUTES = 12 * 60;
const SYSTEM_ACTOR = '00000000-0000-0000-0000-000000000000';

const destinationName = (i) => i.destination_name ?? 'Unnamed destination';

export function IncidentsPage({ query }) {
  const status = FILTERS.some(([v]) => v === query.get('status')) ? query.get('status') : 'open';
  const before = beforeParam(query);
  const list = useLoad((signal) => api.get(`/incidents?status=${status}&limit=25${before}`, { signal }).then((r) => r.data), [status, before]);
  usePoll(list.reload, 10_000, [status, before]);
  return html`<${Page} title="Incidents" wide>
    <p class="muted">One incident per failing destination, with its likely cause. Open incidents resolve by themselves
      once the destination answers 2xx again and stays quiet for 10 minutes.</p>
    <form class="inline" onSubmit=${(e) => e.preventDefault()}>
      <${Field} id="inc-filter" label="Show">
        <select id="inc-filter" value=${status} onChange=${(e) => setQuery({ status: e.currentTarget.value === 'open' ? '' : e.currentTarget.value, before: '' })}>
          ${FILTERS.map(([v, label]) => html`<option value=${v}>${label}</option>`)}
        </select>
      <//>
    </form>
    ${list.error ? html`<${ErrorNote} error=${list.error} />` : null}
    ${!list.data ? (list.error ? null : html`<${Loading} />`) : html`<${IncidentTable} items=${list.data.data} status=${status} />
      <${PagerLinks} path="/incidents" query=${query} meta=${list.data.meta} label="Incident pages" />`}
  <//>`;
}

function IncidentTable({ items, status }) {
  if (items.length === 0) return html`<${Empty}>No ${status === 'all' ? '' : status + ' '}incidents.<//>`;
  return html`<div class="table-wrap" role="region" aria-label="Incidents" tabindex="0">
    <table class="incidents cards">
      <thead><tr><th scope="col">Status</th><th scope="col">Destination</th><th scope="col">Likely cause</th>
        <th scope="col">Failures</th><th scope="col">Endpoints</th><th scope="col">Last failure</th></tr></thead>
      <tbody>
        ${items.map((i) => html`<tr key=${i.id} data-id=${i.id}>
          <td data-label="Status"><${Badge} tone=${STATUS_TONE[i.status]}>${i.status}<//></td>
          <td data-label="Destination"><a href=${'/incidents/' + i.id}>${destinationName(i)}</a>${i.is_recurring ? html` <${Badge} tone="warn">recurring<//>` : null}</td>
          <td data-label="Likely cause">${i.likely_cause}</td>
          <td data-label="Failures">${i.failure_count}</td>
          <td data-label="Endpoints">${i.endpoint_count}</td>
          <td data-label="Last failure"><time datetime=${i.last_failure_at} title=${formatTime(i.last_failure_at)}>${timeAgo(i.last_failure_at)}</time></td>
        </tr>`)}
      </tbody>
    </table>
  </div>`;
}

/** One incident; keyed by its id so that nothing of one incident (a batch, a typed rate) carries over to the next. */
export function IncidentPage({ params }) {
  return html`<${Incident} key=${params.id} params=${params} />`;
}

function Incident({ params }) {
  const me = useMe();
  const incident = useLoad((signal) => api.get(`/incidents/${params.id}`, { signal }).then((r) => r.data), [params.id]);
  // the timeline and counts move by themselves (new failures, automatic pause or resolution)
  usePoll(incident.reload, 5_000, [params.id]);
  const [batchId, setBatchId] = useState(null);
  if (!incident.data) return html`<${PendingPage} title="Incident" back="/incidents" backLabel="All incidents" load=${incident} />`;
  const inc = incident.data;
  const canUpdate = can(me, 'incidents.update', 'incidents:write');
  const canReplay = can(me, 'incidents.replay', 'incidents:write');
  const shownBatch = batchId ?? inc.latest_replay_batch_id;
  return html`<${Page} title=${`${destinationName(inc)} · ${inc.status}`} wide>
    <p><a href="/incidents">All incidents</a></p>
    ${incident.error ? html`<${ErrorNote} error=${incident.error} />` : null}
    <${Summary} inc=${inc} />
    ${canUpdate ? html`<${StatusActions} inc=${inc} onChanged=${incident.reload} />` : null}
    <section class="panel" aria-labelledby="replay-h">
      <h2 id="replay-h">Replay the failures</h2>
      ${canReplay
        ? html`<${ReplayForm} inc=${inc} plan=${me.organization} onQueued=${(b) => {
            setBatchId(b.replay_batch_id);
            incident.reload();
          }} />`
        : html`<p class="muted">Replaying needs a key that may replay incidents (developer role or above, incidents:write).</p>`}
      ${shownBatch ? html`<${BatchProgress} key=${shownBatch} id=${shownBatch} canChange=${canReplay} onChanged=${incident.reload} />` : null}
    </section>
    <${Timeline} inc=${inc} me=${me} canNote=${canUpdate} onAdded=${incident.reload} />
    <${Failures} inc=${inc} />
  <//>`;
}

/** An agent destination's incident has destination_url agent://<agent id>: no public network to name. */
const agentIdOf = (inc) => (inc.destination_url?.startsWith('agent://') ? inc.destination_url.slice('agent://'.length) : null);

/** "An agent on a laptop or private machine: <its name>", instead of an ASN it cannot have. */
function AgentNetwork({ agentId }) {
  const agent = useLoad((signal) => api.get(`/agents/${agentId}`, { signal }).then((r) => r.data), [agentId]);
  const name = agent.data?.name;
  return html`<span id="inc-network">An agent on a laptop or private machine: <a href=${'/agents'}>${name ?? agentId}</a>
    ${agent.data?.environment ? html` <span class="muted">(${agent.data.environment})</span>` : null}</span>`;
}

function Summary({ inc }) {
  return html`<dl class="props incident-props">
    <dt>Status</dt><dd><${Badge} tone=${STATUS_TONE[inc.status]}>${inc.status}<//>
      ${inc.resolved_at ? html` <span class="muted">resolved ${formatTime(inc.resolved_at)}${inc.resolved_by === SYSTEM_ACTOR ? ' automatically' : ''}</span>` : null}</dd>
    <dt>Likely cause</dt><dd id="inc-cause">${inc.likely_cause}</dd>
    <dt>Destination</dt><dd>${destinationName(inc)}${inc.destination_url ? html`<br /><code>${inc.destination_url}</code>` : null}</dd>
    <dt>Network</dt><dd>${agentIdOf(inc) ? html`<${AgentNetwork} agentId=${agentIdOf(inc)} />` : inc.asn === null ? html`<span class="muted">unknown ASN</span>` : `AS${inc.asn}${inc.asn_org ? ' ' + inc.asn_org : ''}`}
      ${inc.asn_destination_count > 1 ? html` <${Badge} tone="warn">${inc.asn_destination_count} destinations failing on this network<//>` : null}</dd>
    <dt>Failures</dt><dd>${plural(inc.failure_count, 'failure')} on ${plural(inc.endpoint_count, 'endpoint')}; ${inc.unreplayed_count} not replayed yet</dd>
    <dt>First failure</dt><dd>${formatTime(inc.first_failure_at)}</dd>
    <dt>Last failure</dt><dd>${formatTime(inc.last_failure_at)}</dd>
    ${inc.is_recurring
      ? html`<dt>Recurring</dt><dd>${inc.previous_incident_id ? html`Came back within 24 hours of <a href=${'/incidents/' + inc.previous_incident_id}>the previous incident</a>.` : 'yes'}</dd>`
      : null}
  </dl>`;
}

function StatusActions({ inc, onChanged }) {
  const action = useAction();
  const change = (status) =>
    action.run(async () => {
      await api.patch(`/incidents/${inc.id}`, { status });
      onChanged();
    });
  return html`<div class="actions status-actions" role="group" aria-label="Change the status">
    ${STATUS_ACTIONS.filter(([s]) => s !== inc.status).map(([s, label]) => html`<button type="button" aria-disabled=${action.busy ? 'true' : undefined} onClick=${() => change(s)}>${label}</button>`)}
    <${ErrorNote} error=${action.error} />
  </div>`;
}

/** What a rate would do: an error when it is refused, else the estimate. */
function estimateOf(count, rateText) {
  const rate = Number(rateText);
  if (!/^\d+$/.test(String(rateText).trim()) || rate < MIN_RATE || rate > MAX_RATE) {
    return { ok: false, text: `The rate must be a whole number from ${MIN_RATE} to ${MAX_RATE} per minute.` };
  }
  if (count === 0) return { ok: true, text: 'Nothing left to replay: every failure was replayed or has recovered.' };
  const minutes = count / rate;
  const text = `${plural(count, 'failure')} at ${rate}/min: about ${formatDuration(minutes * 60)}.`;
  if (minutes > MAX_BATCH_MINUTES) {
    return { ok: false, text: `${text} That is over the 12-hour limit: choose at least ${Math.ceil(count / MAX_BATCH_MINUTES)} per minute.` };
  }
  return { ok: true, text };
}

function ReplayForm({ inc, plan, onQueued }) {
  const [rate, setRate] = useState('60');
  const [refused, setRefused] = useState(null);
  const [queued, setQueued] = useState(null);
  const action = useAction();
  const estimate = estimateOf(inc.unreplayed_count, rate);
  const submit = (e) => {
    e.preventDefault();
    setRefused(null);
    setQueued(null);
    // refused here, before the API is asked: the same rule the API applies
    if (!estimate.ok) return setRefused(new Error(estimate.text));
    action.run(async () => {
      const b = (await api.post(`/incidents/${inc.id}/replay`, { requests_per_minute: Number(rate) })).data;
      setQueued(b);
      onQueued(b);
    });
  };
  return html`<form class="ops-form replay" id="inc-replay" onSubmit=${submit} aria-describedby="inc-estimate">
    <p class="muted">Sends every failure not replayed yet to its destination again, paced across all nodes at the rate you pick.</p>
    ${plan.limits && plan.limits.incident_replay === false
      ? html`<p class="notice">Incident replay is not included in the ${plan.plan} plan; the server will refuse it.</p>`
      : null}
    <div class="inline-row">
      <${Field} id="inc-rate" label="Requests per minute">
        <input id="inc-rate" type="number" inputmode="numeric" min=${MIN_RATE} max=${MAX_RATE} step="1" required value=${rate}
          aria-describedby="inc-estimate" onInput=${(e) => {
            setRate(e.currentTarget.value);
            setRefused(null);
          }} />
      <//>
      <button type="submit" class="primary" aria-disabled=${action.busy ? 'true' : undefined}>${action.busy ? 'Queuing…' : 'Replay'}</button>
    </div>
    <p id="inc-estimate" class=${estimate.ok ? 'muted' : 'error'} aria-live="polite">${estimate.text}</p>
    <${ErrorNote} error=${refused ?? action.error} id="inc-replay-error" />
    ${queued ? html`<p class="ok" role="status" id="inc-batch">Batch queued: ${queued.queued_count} queued at ${queued.requests_per_minute}/min.</p>` : null}
  </form>`;
}

const BATCH_TONE = { running: 'ok', paused: 'warn', cancelled: 'muted', finished: 'ok' };

/** A replay batch's progress, refreshed every 2 s while it can still change. */
function BatchProgress({ id, canChange, onChanged }) {
  const batch = useLoad((signal) => api.get(`/replay-batches/${id}`, { signal }).then((r) => r.data), [id]);
  const live = !batch.data || batch.data.status === 'running' || batch.data.status === 'paused';
  usePoll(batch.reload, 2_000, [id], live);
  const action = useAction();
  const change = (verb) =>
    action.run(async () => {
      batch.setData((await api.post(`/replay-batches/${id}/${verb}`)).data);
      // the pressed button is replaced (Pause by Resume, or all of them once cancelled): the batch's heading keeps the focus
      document.getElementById('batch-h')?.focus();
      onChanged();
    });
  if (!batch.data) return batch.error ? html`<${ErrorNote} error=${batch.error} />` : html`<${Loading} label="Loading the replay batch…" />`;
  const b = batch.data;
  const done = b.delivered_count + b.failed_count;
  return html`<div class="batch" aria-labelledby="batch-h">
    <h3 id="batch-h" tabindex="-1">Replay batch <${Badge} tone=${BATCH_TONE[b.status]}>${b.status}<//></h3>
    <label class="progress-label" for="batch-progress">${done} of ${b.queued_count} sent</label>
    <progress id="batch-progress" max=${b.queued_count} value=${done}>${done} of ${b.queued_count}</progress>
    <p class="batch-counts" role="status" aria-live="polite">
      ${b.delivered_count} delivered · ${b.failed_count} failed · ${b.remaining_count} remaining · ${b.requests_per_minute}/min
      ${b.estimated_end_at ? ` · ends about ${formatTime(b.estimated_end_at)}` : ''}${b.finished_at ? ` · ended ${formatTime(b.finished_at)}` : ''}
    </p>
    ${b.paused_reason ? html`<p class="notice">Paused: ${b.paused_reason}.</p>` : null}
    ${canChange && live
      ? html`<div class="actions">
          ${b.status === 'running' ? html`<button type="button" aria-disabled=${action.busy ? 'true' : undefined} onClick=${() => change('pause')}>Pause</button>` : null}
          ${b.status === 'paused' ? html`<button type="button" aria-disabled=${action.busy ? 'true' : undefined} onClick=${() => change('resume')}>Resume</button>` : null}
          <${ConfirmButton} label="Cancel batch" confirmLabel="Cancel the batch" question="Stop sending what is left?" busy=${action.busy}
            onConfirm=${() => change('cancel')} />
        </div>`
      : null}
    <${ErrorNote} error=${action.error ?? batch.error} />
  </div>`;
}

function Timeline({ inc, me, canNote, onAdded }) {
  const [body, setBody] = useState('');
  const action = useAction();
  const submit = (e) => {
    e.preventDefault();
    action.run(async () => {
      await api.post(`/incidents/${inc.id}/updates`, { body });
      setBody('');
      onAdded();
    });
  };
  const author = (u) => (u.is_system ? 'system' : u.author_id === me.member.id ? 'you' : `member ${u.author_id}`);
  return html`<section aria-labelledby="timeline-h">
    <h2 id="timeline-h">Timeline</h2>
    ${canNote
      ? html`<form class="ops-form note" id="inc-note" onSubmit=${submit}>
          <${Field} id="inc-note-text" label="Add a note">
            <textarea id="inc-note-text" required maxlength="10000" value=${body} onInput=${(e) => setBody(e.currentTarget.value)}></textarea>
          <//>
          <div><button type="submit" aria-disabled=${action.busy ? 'true' : undefined}>Add note</button></div>
          <${ErrorNote} error=${action.error} />
        </form>`
      : null}
    <ol class="timeline" id="inc-timeline">
      ${inc.updates.map((u) => html`<li key=${u.id} class=${u.is_system ? 'system' : 'member'}>
        <span class="muted"><time datetime=${u.created_at}>${formatTime(u.created_at)}</time> · ${author(u)}:</span> <span class="body">${u.body}</span>
      </li>`)}
    </ol>
  </section>`;
}

function Failures({ inc }) {
  return html`<section aria-labelledby="failures-h">
    <h2 id="failures-h">Failures <span class="muted">(newest ${Math.min(100, inc.failure_count)} of ${inc.failure_count})</span></h2>
    ${inc.failures.length === 0
      ? html`<${Empty}>No failures recorded.<//>`
      : html`<div class="table-wrap" role="region" aria-label="Failures" tabindex="0">
          <table id="inc-failures" class="cards">
            <thead><tr><th scope="col">Failed</th><th scope="col">Request</th><th scope="col">Status</th><th scope="col">Error</th>
              <th scope="col">Replayed</th><th scope="col">Replay status</th></tr></thead>
            <tbody>
              ${inc.failures.map((f) => html`<tr key=${f.request_id + f.destination_id}>
                <td data-label="Failed">${formatTime(f.failed_at)}</td>
                <td data-label="Request"><a href=${`/endpoints/${f.endpoint_id}/requests/${f.request_id}`} title=${f.request_id}><code>${shortId(f.request_id)}</code></a></td>
                <td data-label="Status" class="failure-status"><${Badge} tone=${FAILURE_TONE[f.status] ?? 'muted'}>${f.status.replace('_', ' ')}<//>
                  ${f.status === 'retrying' && f.next_attempt_at ? html` <span class="muted small">next ${formatTime(f.next_attempt_at)}</span>` : null}
                  <span class="muted small">${f.status_code ? ` HTTP ${f.status_code}` : f.error_class ? ` ${f.error_class.replaceAll('_', ' ')}` : ''}</span></td>
                <td data-label="Error">${f.error ?? ''}</td>
                <td data-label="Replayed">${f.replayed_at ? formatTime(f.replayed_at) : ''}</td>
                <td data-label="Replay status">${f.replay_status_code ?? ''}</td>
              </tr>`)}
            </tbody>
          </table>
        </div>`}
  </section>`;
}
