// Agents: the organization's enrolled agents with their live status,
// enrollment (the connect command with its token, shown once), token
// re-issue, rename and environment change, and revocation. API: docs/agents.md.
import { api, getAll } from '../lib/api.js';
import { formatTime, timeAgo } from '../lib/format.js';
import { html, useState } from '../lib/html.js';
import { useAction, useLoad, usePoll } from '../lib/hooks.js';
import { can, useMe } from '../lib/session.js';
import { Badge, ConfirmButton, Empty, ErrorNote, Field, Loading, OneTimeSecret, Page } from '../lib/ui.js';

const ENVIRONMENTS = [
  ['development', 'Development (never retried, not capped by the plan)'],
  ['production', 'Production (retried; counts toward the plan)'],
];

/** "connected from host (v0.1.0)", "disconnected, last seen …" or "never connected". */
function statusText(a) {
  if (a.revoked_at) return `revoked ${formatTime(a.revoked_at)}`;
  if (a.status === 'connected') return `connected from ${a.hostname ?? 'an unnamed host'}${a.agent_version ? ` (v${a.agent_version})` : ''}`;
  return a.last_seen_at ? `disconnected, last seen ${timeAgo(a.last_seen_at)}` : 'never connected';
}

export function AgentsPage() {
  const me = useMe();
  const [showRevoked, setShowRevoked] = useState(false);
  const agents = useLoad(() => getAll(`/agents${showRevoked ? '?include_revoked=true' : ''}`), [showRevoked]);
  // presence changes by itself: an agent connects, drops, reconnects
  usePoll(agents.reload, 3_000, [showRevoked]);
  const manage = can(me, 'agents.manage', 'destinations:write');
  const limits = me.organization.limits ?? {};
  const production = (agents.data ?? []).filter((a) => a.environment === 'production' && !a.revoked_at).length;
  return html`<${Page} title="Agents">
    <p class="muted">An agent runs on your machine, dials out to Weir and forwards captured webhooks to its own
      loopback ports (<code>http://127.0.0.1:…</code>), so a laptop or a private server receives them without opening a port.
      Assign an agent to an endpoint from the endpoint's Destinations tab.</p>
    ${manage ? html`<${EnrollForm} limits=${limits} production=${production} onEnrolled=${agents.reload} />` : html`<p class="muted">Enrolling and managing agents is for admins.</p>`}
    <h2 id="agents-h" tabindex="-1">Enrolled agents</h2>
    <label class="check"><input type="checkbox" checked=${showRevoked} onChange=${(e) => setShowRevoked(e.currentTarget.checked)} /> Show revoked agents</label>
    ${agents.error ? html`<${ErrorNote} error=${agents.error} />` : null}
    ${!agents.data
      ? agents.error ? null : html`<${Loading} />`
      : agents.data.length === 0
        ? html`<${Empty}>No agents yet.<//>`
        : html`<ul class="agents" aria-live="polite">${agents.data.map((a) => html`<${AgentItem} key=${a.id} agent=${a} manage=${manage} onChanged=${agents.reload} />`)}</ul>`}
  <//>`;
}

function EnrollForm({ limits, production, onEnrolled }) {
  const [name, setName] = useState('');
  const [environment, setEnvironment] = useState('development');
  const [enrolled, setEnrolled] = useState(null);
  const action = useAction();
  const submit = (e) => {
    e.preventDefault();
    action.run(async () => {
      const a = (await api.post('/agents', { name: name.trim(), environment })).data;
      setEnrolled(a);
      setName('');
      onEnrolled();
    });
  };
  const cap = limits.max_agents;
  return html`<section class="panel" aria-labelledby="enroll-h">
    <h2 id="enroll-h">Enroll an agent</h2>
    <form class="ops-form" id="new-agent" onSubmit=${submit}>
      <${Field} id="agent-name" label="Name" hint="What the machine is, e.g. “laptop” or “billing-staging”.">
        <input id="agent-name" required maxlength="100" aria-describedby="agent-name-hint" value=${name} onInput=${(e) => setName(e.currentTarget.value)} />
      <//>
      <${Field} id="agent-env" label="Environment"
        hint=${cap === undefined ? 'Production agents count toward the plan.' : `Production agents in use: ${production} of ${cap} on this plan.`}>
        <select id="agent-env" aria-describedby="agent-env-hint" value=${environment} onChange=${(e) => setEnvironment(e.currentTarget.value)}>
          ${ENVIRONMENTS.map(([v, label]) => html`<option value=${v}>${label}</option>`)}
        </select>
      <//>
      <div><button type="submit" class="primary" aria-disabled=${action.busy ? 'true' : undefined}>${action.busy ? 'Enrolling…' : 'Enroll'}</button></div>
      <${ErrorNote} error=${action.error} id="agent-error" />
    </form>
    ${enrolled
      ? html`<div id="agent-enrolled">
          <${OneTimeSecret} label=${`Connect command for ${enrolled.name}`} value=${enrolled.command}
            note="Run it on the machine the agent serves. It holds the agent's token, shown only this once: copy it now." />
        </div>`
      : null}
  </section>`;
}

function AgentItem({ agent: a, manage, onChanged }) {
  const [editing, setEditing] = useState(false);
  const [reissued, setReissued] = useState(null);
  const action = useAction();
  const connected = a.status === 'connected' && !a.revoked_at;
  const reissue = () =>
    action.run(async () => {
      setReissued((await api.post(`/agents/${a.id}/token`)).data);
      onChanged();
    });
  const revoke = () =>
    action.run(async () => {
      await api.del(`/agents/${a.id}`);
      // this item goes away with the button that had the focus: the list's heading takes it
      document.getElementById('agents-h')?.focus();
      onChanged();
    });
  const headingId = 'agent-' + a.id;
  return html`<li class="agent panel" aria-labelledby=${headingId} data-status=${a.revoked_at ? 'revoked' : a.status}>
    <div class="agent-head">
      <span class=${'dot ' + (connected ? 'ok' : 'muted')} aria-hidden="true">●</span>
      <h3 id=${headingId}>${a.name}</h3>
      <${Badge} tone=${a.environment === 'production' ? 'warn' : 'muted'}>${a.environment}<//>
    </div>
    <p class="agent-status"><strong class=${connected ? 'ok' : 'muted'}>${statusText(a)}</strong>${connected && a.connected_at ? html` <span class="muted">since ${formatTime(a.connected_at)}</span>` : null}</p>
    <dl class="props">
      ${a.agent_version ? html`<dt>Version</dt><dd>${a.agent_version}</dd>` : null}
      ${a.hostname ? html`<dt>Host</dt><dd>${a.hostname}</dd>` : null}
      ${connected && a.node ? html`<dt>Weir node</dt><dd>${a.node}</dd>` : null}
      <dt>Enrolled</dt><dd>${formatTime(a.created_at)}</dd>
    </dl>
    ${manage && !a.revoked_at
      ? html`<div class="actions">
          <button type="button" aria-expanded=${editing} onClick=${() => setEditing(!editing)}>Edit<span class="sr-only"> ${a.name}</span></button>
          <${ConfirmButton} label="Re-issue token" confirmLabel="Re-issue the token" question="The current token stops at once and a running agent disconnects. Continue?"
            busy=${action.busy} onConfirm=${reissue} />
          <${ConfirmButton} label="Revoke" confirmLabel="Revoke the agent" question=${`Revoke ${a.name} for good?`} busy=${action.busy} onConfirm=${revoke} />
        </div>`
      : null}
    <${ErrorNote} error=${action.error} />
    ${editing ? html`<${EditAgent} agent=${a} onDone=${() => (setEditing(false), onChanged())} />` : null}
    ${reissued ? html`<${OneTimeSecret} label="New connect command" value=${reissued.command} note="The old token no longer works. Shown only this once: copy it now." />` : null}
  </li>`;
}

function EditAgent({ agent, onDone }) {
  const [name, setName] = useState(agent.name);
  const [environment, setEnvironment] = useState(agent.environment);
  const action = useAction();
  const id = (f) => `agent-${agent.id}-${f}`;
  const submit = (e) => {
    e.preventDefault();
    const patch = {};
    if (name.trim() !== agent.name) patch.name = name.trim();
    if (environment !== agent.environment) patch.environment = environment;
    if (Object.keys(patch).length === 0) return onDone();
    action.run(async () => {
      await api.patch(`/agents/${agent.id}`, patch);
      onDone();
    });
  };
  return html`<form class="ops-form edit-agent" onSubmit=${submit}>
    <${Field} id=${id('name')} label="Name"><input id=${id('name')} required maxlength="100" value=${name} onInput=${(e) => setName(e.currentTarget.value)} /><//>
    <${Field} id=${id('env')} label="Environment">
      <select id=${id('env')} value=${environment} onChange=${(e) => setEnvironment(e.currentTarget.value)}>
        ${ENVIRONMENTS.map(([v, label]) => html`<option value=${v}>${label}</option>`)}
      </select>
    <//>
    <div class="actions"><button type="submit" class="primary" aria-disabled=${action.busy ? 'true' : undefined}>Save</button><button type="button" onClick=${onDone}>Cancel</button></div>
    <${ErrorNote} error=${action.error} />
  </form>`;
}
