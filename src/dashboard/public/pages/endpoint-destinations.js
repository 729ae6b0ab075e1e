// The endpoint page's Destinations tab: the endpoint's forward destinations in
// forwarding order (https and agent), adding one (a new or saved https URL, or
// an enrolled agent), and per destination: enable/disable, method override,
// retry and rate settings, agent target, detach. API: docs/destinations.md,
// docs/forwarding.md.
import { api, getAll } from '../lib/api.js';
import { emptySaved, SavedFields } from '../lib/destinations.js';
import { html, useEffect, useRef, useState } from '../lib/html.js';
import { fieldSetter, useAction, useLoad } from '../lib/hooks.js';
import { can, useMe } from '../lib/session.js';
import { Badge, ConfirmButton, Empty, ErrorNote, Field, Loading } from '../lib/ui.js';
import { isTransformationError, TransformationField, transformationValue } from '../lib/transformation.js';
import { FilterEditor, filterOf, isFilterError, useFilterField } from './endpoint-routing.js';

const DEFAULT_SCHEDULE = [5, 300, 1800, 7200, 18000, 36000, 36000];

/** @param {{ endpoint: { id: string, name: string, forward_url?: string | null } }} props */
export function EndpointDestinations({ endpoint }) {
  const me = useMe();
  const list = useLoad((signal) => api.get(`/endpoints/${endpoint.id}/destinations`, { signal }).then((r) => r.data.data), [endpoint.id]);
  // agent names for the agent destinations (agents.view is every role's)
  const agents = useLoad(() => getAll('/agents?include_revoked=true'), []);
  const canWrite = can(me, 'endpoints.edit', 'destinations:write');
  const canAgent = canWrite && can(me, 'agents.assign_destination');
  const max = me.organization.limits?.max_forward_destinations;
  const agentName = (id) => agents.data?.find((a) => a.id === id)?.name ?? 'an agent';
  return html`<section class="endpoint-destinations" aria-labelledby="fd-h">
    <h2 id="fd-h" tabindex="-1">Forward destinations</h2>
    <p class="muted">Each capture is forwarded to every enabled destination, in this order${endpoint.forward_url ? ', after the endpoint’s own forward URL' : ''}.
      ${max !== undefined && list.data ? ` ${list.data.length} of ${max} on this plan (disabled ones count).` : ''}</p>
    ${list.error ? html`<${ErrorNote} error=${list.error} />` : null}
    ${!list.data
      ? list.error ? null : html`<${Loading} />`
      : list.data.length === 0
        ? html`<${Empty}>No forward destinations yet.<//>`
        : html`<ol class="fd-list">${list.data.map((d, i) => html`<${DestinationItem} key=${d.id} endpoint=${endpoint} d=${d}
            agentName=${agentName(d.agent_id)} canEdit=${d.destination_type === 'agent' ? canAgent : canWrite} onChanged=${list.reload}
            move=${canWrite ? { up: i > 0 ? () => reorder(endpoint, list.data, i, i - 1) : null, down: i < list.data.length - 1 ? () => reorder(endpoint, list.data, i, i + 1) : null } : null} />`)}</ol>`}
    ${canWrite ? html`<${AddHttps} endpoint=${endpoint} onAdded=${list.reload} />` : null}
    ${canAgent ? html`<${AddAgent} endpoint=${endpoint} agents=${agents} onAdded=${list.reload} />` : null}
  </section>`;
}

/**
 * Moves the destination at `from` to `to` and numbers the list 1..n again,
 * patching only the sort_order values that change (ties in the stored
 * order would make a plain swap a no-op).
 */
async function reorder(endpoint, list, from, to) {
  const next = [...list];
  const [moved] = next.splice(from, 1);
  next.splice(to, 0, moved);
  for (const [i, d] of next.entries()) {
    if (d.sort_order !== i + 1) await api.patch(`/endpoints/${endpoint.id}/destinations/${d.id}`, { sort_order: i + 1 });
  }
}

function target(d, agentName) {
  if (d.destination_type === 'https') {
    return html`<code>${d.url}</code>${d.saved_destination_id ? html` <a href=${'/destinations/' + d.saved_destination_id}>in the library</a>` : null}`;
  }
  return html`agent ${agentName} → <code>http://127.0.0.1:${d.target_port}${d.target_path}</code>`;
}

function DestinationItem({ endpoint, d, agentName, canEdit, onChanged, move }) {
  const [open, setOpen] = useState(false);
  const action = useAction();
  const path = `/endpoints/${endpoint.id}/destinations/${d.id}`;
  // after a move the item is re-rendered at its new place: keep the keyboard on its move button there
  const li = useRef(null);
  const refocus = useRef(null);
  useEffect(() => {
    const want = refocus.current;
    if (!want || d.sort_order === want.from) return;
    const buttons = [...li.current.querySelectorAll('button[data-move]')];
    (buttons.find((b) => b.dataset.move === want.which) ?? buttons[0])?.focus();
    refocus.current = null;
  }, [d.sort_order]);
  const moveBy = (which) =>
    action.run(async () => {
      refocus.current = { which, from: d.sort_order };
      await move[which]();
      onChanged();
    });
  const patch = (body) =>
    action.run(async () => {
      await api.patch(path, body);
      onChanged();
    });
  const detach = () =>
    action.run(async () => {
      await api.del(path);
      // this item goes away with the button that had the focus: the list's heading takes it
      document.getElementById('fd-h')?.focus();
      onChanged();
    });
  const headingId = 'fd-' + d.id;
  return html`<li class="panel fd" ref=${li} aria-labelledby=${headingId}>
    <div class="fd-head">
      <h3 id=${headingId}>${d.name}</h3>
      <${Badge} tone="muted">${d.destination_type === 'https' ? 'HTTPS' : 'agent'}<//>
      ${d.enabled ? html`<${Badge} tone="ok">enabled<//>` : html`<${Badge} tone="warn">disabled<//>`}
      ${d.environment_override ? html`<${Badge} tone="muted">as development<//>` : null}
      ${d.transformation ? html`<${Badge} tone="muted">transformed<//>` : null}
    </div>
    <p class="fd-target">${target(d, agentName)}</p>
    <p class="muted fd-summary">${summary(d)}</p>
    ${canEdit
      ? html`<div class="actions">
          <button type="button" aria-disabled=${action.busy ? 'true' : undefined} onClick=${() => patch({ enabled: !d.enabled })}>${d.enabled ? 'Disable' : 'Enable'}<span class="sr-only"> ${d.name}</span></button>
          <button type="button" aria-expanded=${open} onClick=${() => setOpen(!open)}>Settings<span class="sr-only"> of ${d.name}</span></button>
          ${move?.up ? html`<button type="button" data-move="up" onClick=${() => moveBy('up')}>Move up<span class="sr-only"> ${d.name}</span></button>` : null}
          ${move?.down ? html`<button type="button" data-move="down" onClick=${() => moveBy('down')}>Move down<span class="sr-only"> ${d.name}</span></button>` : null}
          <${ConfirmButton} label="Detach" confirmLabel="Detach it" question=${`Stop forwarding to ${d.name}? Its waiting deliveries are dropped.`}
            busy=${action.busy} onConfirm=${detach} />
        </div>`
      : null}
    <${ErrorNote} error=${action.error} />
    ${open ? html`<${SettingsForm} d=${d} path=${path} endpointId=${endpoint.id} onSaved=${() => (setOpen(false), onChanged())} />` : null}
  </li>`;
}

function summary(d) {
  const parts = [d.method_override ? `sent as ${d.method_override}` : 'sent with the captured method'];
  if (d.destination_type === 'https') {
    parts.push(d.retry_enabled ? `retries after ${d.retry_schedule.join(', ')} s${d.intelligent_retry ? ' (intelligent)' : ''}` : 'no retries');
  } else {
    parts.push(d.environment_override ? 'never retried (development)' : "retried by the agent's environment");
  }
  parts.push(d.rate_limit_enabled ? `at most ${d.rate_limit_per_minute}/min` : 'no rate limit');
  if (d.filter) parts.push('filtered (docs/routing.md)');
  return parts.join(' · ');
}

/** "5, 300 1800" → [5, 300, 1800]; anything that is not a whole number is kept as NaN for the API to refuse. */
const parseSchedule = (text) => text.split(/[\s,]+/).filter(Boolean).map((s) => (/^\d+$/.test(s) ? Number(s) : NaN));

function SettingsForm({ d, path, endpointId, onSaved }) {
  const https = d.destination_type === 'https';
  const [v, setV] = useState({
    name: d.name,
    method_override: d.method_override ?? '',
    retry_enabled: d.retry_enabled ?? true,
    retry_schedule: (d.retry_schedule ?? DEFAULT_SCHEDULE).join(', '),
    intelligent_retry: d.intelligent_retry ?? true,
    rate_limit_enabled: d.rate_limit_enabled,
    rate_limit_per_minute: d.rate_limit_per_minute === null ? '' : String(d.rate_limit_per_minute),
    target_port: d.target_port === null ? '' : String(d.target_port),
    target_path: d.target_path ?? '/',
    as_development: d.environment_override === 'development',
  });
  const [code, setCode] = useState(d.transformation?.code ?? '');
  const [scheduleError, setScheduleError] = useState(null);
  const action = useAction();
  const filter = useFilterField(d.filter);
  const id = (f) => `fd-${d.id}-${f}`;
  const set = fieldSetter(setV);
  const submit = (e) => {
    e.preventDefault();
    setScheduleError(null);
    if (!filter.parsed.ok) return (filter.touch(), document.getElementById(id('filter'))?.focus());
    const body = {
      name: v.name.trim(),
      method_override: v.method_override.trim() || null,
      rate_limit_enabled: v.rate_limit_enabled,
      rate_limit_per_minute: v.rate_limit_per_minute.trim() === '' ? null : Number(v.rate_limit_per_minute),
      filter: filter.parsed.value,
    };
    if (https) {
      const schedule = parseSchedule(v.retry_schedule);
      if (schedule.some(Number.isNaN)) return setScheduleError(new Error('The retry schedule is a list of whole numbers of seconds, e.g. 5, 300, 1800.'));
      Object.assign(body, { retry_enabled: v.retry_enabled, retry_schedule: schedule, intelligent_retry: v.intelligent_retry });
    } else {
      Object.assign(body, {
        target_port: v.target_port.trim() === '' ? undefined : Number(v.target_port),
        target_path: v.target_path,
        environment_override: v.as_development ? 'development' : null,
      });
    }
    // sent only when changed (each save of code compiles it); emptied: transformation null
    if (code !== (d.transformation?.code ?? '')) body.transformation = transformationValue(code);
    action.run(async () => {
      await api.patch(path, body);
      onSaved();
    });
  };
  return html`<form class="ops-form fd-settings" noValidate onSubmit=${submit} aria-label=${`Settings of ${d.name}`}>
    <${Field} id=${id('name')} label="Name"><input id=${id('name')} maxlength="100" value=${v.name} onInput=${set('name')} /><//>
    <${Field} id=${id('method')} label="Method override" hint="Empty: forward with the captured request's method.">
      <input id=${id('method')} maxlength="32" aria-describedby=${id('method') + '-hint'} placeholder="e.g. POST" value=${v.method_override} onInput=${set('method_override')} />
    <//>
    ${https
      ? html`<fieldset>
          <legend>Retries</legend>
          <label class="check"><input type="checkbox" checked=${v.retry_enabled} onChange=${set('retry_enabled')} /> Retry failed deliveries</label>
          <${Field} id=${id('schedule')} label="Retry schedule (seconds)" hint="The delay before each retry, 1 to 20 of them, each 1-86400 s. Default: 5, 300, 1800, 7200, 18000, 36000, 36000.">
            <input id=${id('schedule')} aria-describedby=${id('schedule') + '-hint'} value=${v.retry_schedule} onInput=${set('retry_schedule')} />
          <//>
          <label class="check"><input type="checkbox" checked=${v.intelligent_retry} onChange=${set('intelligent_retry')} /> Intelligent retry (honour Retry-After, skip what cannot succeed)</label>
        </fieldset>`
      : html`<fieldset>
          <legend>Agent target</legend>
          <p class="hint">Agent destinations retry by the agent's environment: a production agent retries retryable failures,
            a development agent never retries. There are no retry settings here.</p>
          <${Field} id=${id('port')} label="Target port"><input id=${id('port')} type="number" min="1" max="65535" value=${v.target_port} onInput=${set('target_port')} /><//>
          <${Field} id=${id('path')} label="Target path"><input id=${id('path')} value=${v.target_path} onInput=${set('target_path')} /><//>
          <label class="check"><input type="checkbox" checked=${v.as_development} onChange=${set('as_development')} /> Treat as development (never retried)</label>
        </fieldset>`}
    <fieldset>
      <legend>Rate limit</legend>
      <label class="check"><input type="checkbox" checked=${v.rate_limit_enabled} onChange=${set('rate_limit_enabled')} /> Limit the rate</label>
      <${Field} id=${id('rate')} label="Requests per minute" hint="1-60000; required when the rate is limited.">
        <input id=${id('rate')} type="number" min="1" max="60000" aria-describedby=${id('rate') + '-hint'} value=${v.rate_limit_per_minute} onInput=${set('rate_limit_per_minute')} />
      <//>
    </fieldset>
    <${FilterEditor} idPrefix=${'fd-' + d.id} field=${filter} endpointId=${d.endpoint_id} apiError=${action.error} />
    <${TransformationField} id=${id('code')} value=${code} onChange=${setCode} endpointId=${endpointId} destinationId=${d.id}
      error=${isTransformationError(action.error) ? action.error : null} />
    <div class="actions"><button type="submit" class="primary" aria-disabled=${action.busy ? 'true' : undefined}>Save settings</button></div>
    <${ErrorNote} error=${scheduleError ?? (isFilterError(action.error) || isTransformationError(action.error) ? null : action.error)} />
  </form>`;
}

function AddHttps({ endpoint, onAdded }) {
  const [mode, setMode] = useState('new');
  const library = useLoad(() => getAll('/destinations'), []);
  const [value, setValue] = useState(emptySaved());
  const [savedId, setSavedId] = useState('');
  const [code, setCode] = useState('');
  const [note, setNote] = useState(null);
  const action = useAction();
  const filter = useFilterField(null);
  const submit = (e) => {
    e.preventDefault();
    setNote(null);
    if (!filter.parsed.ok) return (filter.touch(), document.getElementById('add-https-filter')?.focus());
    action.run(async () => {
      if (mode === 'new') {
        const r = await api.post('/destinations', { ...value, name: value.name.trim(), url: value.url.trim(), endpoint_id: endpoint.id, ...filterOf(filter), ...withCode(code) });
        setValue(emptySaved());
        filter.setText('');
        // the destination was saved even when attaching it failed (201 with attachment_error)
        setNote(r.attachment_error
          ? { tone: 'notice', text: `Saved “${r.data.name}” to the library, but it was not attached: ${r.attachment_error.message}` }
          : { tone: 'ok', text: `Added “${r.data.name}”.` });
      } else {
        const r = await api.post(`/endpoints/${endpoint.id}/destinations`, { destination_id: savedId, ...filterOf(filter), ...withCode(code) });
        setSavedId('');
        filter.setText('');
        setNote({ tone: 'ok', text: `Added “${r.data.name}”.` });
      }
      setCode('');
      library.reload();
      onAdded();
    });
  };
  return html`<section class="panel" aria-labelledby="add-https-h">
    <h3 id="add-https-h">Add an HTTPS destination</h3>
    <form class="ops-form" id="add-https" onSubmit=${submit}>
      <fieldset>
        <legend>Source</legend>
        <label class="check"><input type="radio" name="https-mode" value="new" checked=${mode === 'new'} onChange=${() => setMode('new')} /> A new URL (saved to the library too)</label>
        <label class="check"><input type="radio" name="https-mode" value="saved" checked=${mode === 'saved'} onChange=${() => setMode('saved')} /> From the saved library</label>
      </fieldset>
      ${mode === 'new'
        ? html`<${SavedFields} prefix="add-https" value=${value} onChange=${setValue} />`
        : html`<${Field} id="add-saved" label="Saved destination">
            <select id="add-saved" required value=${savedId} onChange=${(e) => setSavedId(e.currentTarget.value)}>
              <option value="">Choose one</option>
              ${(library.data ?? []).map((s) => html`<option value=${s.id}>${s.name} (${s.url})</option>`)}
            </select>
          <//>
          <${ErrorNote} error=${library.error} />`}
      <${FilterEditor} idPrefix="add-https" field=${filter} endpointId=${endpoint.id} apiError=${action.error} />
      <${TransformationField} id="add-https-code" value=${code} onChange=${setCode} endpointId=${endpoint.id}
        error=${isTransformationError(action.error) ? action.error : null} />
      <div><button type="submit" class="primary" aria-disabled=${action.busy ? 'true' : undefined}>Add destination</button></div>
      <${ErrorNote} error=${isFilterError(action.error) || isTransformationError(action.error) ? null : action.error} id="add-https-error" />
      ${note ? html`<p class=${note.tone} role=${note.tone === 'ok' ? 'status' : 'alert'} id="add-https-note">${note.text}</p>` : null}
    </form>
  </section>`;
}

function AddAgent({ endpoint, agents, onAdded }) {
  const blank = { name: '', agent_id: '', target_port: '', target_path: '/', as_development: false };
  const [v, setV] = useState(blank);
  const [code, setCode] = useState('');
  const [done, setDone] = useState('');
  const action = useAction();
  const filter = useFilterField(null);
  const set = fieldSetter(setV);
  const live = (agents.data ?? []).filter((a) => !a.revoked_at);
  const submit = (e) => {
    e.preventDefault();
    setDone('');
    // the API judges every field (missing_field names what is absent), so its message is the one shown
    const body = { destination_type: 'agent', name: v.name.trim(), endpoint_id: endpoint.id };
    if (v.agent_id) body.agent_id = v.agent_id;
    if (v.target_port.trim() !== '') body.target_port = Number(v.target_port);
    if (v.target_path !== '') body.target_path = v.target_path;
    if (v.as_development) body.environment_override = 'development';
    if (!filter.parsed.ok) return (filter.touch(), document.getElementById('add-agent-filter')?.focus());
    Object.assign(body, filterOf(filter), withCode(code));
    action.run(async () => {
      const r = await api.post('/destinations', body);
      setV(blank);
      filter.setText('');
      setCode('');
      setDone(`Added “${r.data.name}”.`);
      onAdded();
    });
  };
  return html`<section class="panel" aria-labelledby="add-agent-h">
    <h3 id="add-agent-h">Add an agent destination</h3>
    <p class="muted">Forwards to a port on the agent's own machine (<code>http://127.0.0.1:port/path</code>). Enroll agents on the <a href="/agents">Agents</a> page.</p>
    <form class="ops-form" id="add-agent" noValidate onSubmit=${submit}>
      <${Field} id="add-agent-name" label="Name"><input id="add-agent-name" maxlength="100" value=${v.name} onInput=${set('name')} /><//>
      <${Field} id="add-agent-agent" label="Agent">
        <select id="add-agent-agent" value=${v.agent_id} onChange=${set('agent_id')}>
          <option value="">Choose an agent</option>
          ${live.map((a) => html`<option value=${a.id}>${a.name} (${a.environment}, ${a.status})</option>`)}
        </select>
      <//>
      <${ErrorNote} error=${agents.error} />
      <${Field} id="add-agent-port" label="Target port" hint="1-65535, on the agent's machine.">
        <input id="add-agent-port" type="number" inputmode="numeric" min="1" max="65535" aria-describedby="add-agent-port-hint" value=${v.target_port} onInput=${set('target_port')} />
      <//>
      <${Field} id="add-agent-path" label="Target path" hint="Starts with /; may carry a query string.">
        <input id="add-agent-path" aria-describedby="add-agent-path-hint" value=${v.target_path} onInput=${set('target_path')} />
      <//>
      <label class="check"><input type="checkbox" checked=${v.as_development} onChange=${set('as_development')} /> Treat as development (never retried), even on a production agent</label>
      <${FilterEditor} idPrefix="add-agent" field=${filter} endpointId=${endpoint.id} apiError=${action.error} />
      <${TransformationField} id="add-agent-code" value=${code} onChange=${setCode} endpointId=${endpoint.id}
        error=${isTransformationError(action.error) ? action.error : null} />
      <div><button type="submit" class="primary" aria-disabled=${action.busy ? 'true' : undefined}>Add agent destination</button></div>
      <${ErrorNote} error=${isFilterError(action.error) || isTransformationError(action.error) ? null : action.error} id="add-agent-error" />
      ${done ? html`<p class="ok" role="status">${done}</p>` : null}
    </form>
  </section>`;
}

/** The transformation field of a new destination: left out when the code is empty. */
const withCode = (code) => (code.trim() === '' ? {} : { transformation: { code } });
