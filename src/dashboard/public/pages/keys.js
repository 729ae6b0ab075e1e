// API keys (/v1/api-keys, docs/auth.md): the list, a new key with its access
// mode and scopes (the Read + Notify preset; the spec's refusals checked here
// before the API checks them again), the new key shown once, editing a key's
// access (api_keys.manage), and revoking. Revoking the key this browser is
// signed in with signs out.
import { api, getAll } from '../lib/api.js';
import { formatShortTime, formatTime, timeAgo } from '../lib/format.js';
import { html, useEffect, useRef, useState } from '../lib/html.js';
import { useAction, useLoad } from '../lib/hooks.js';
import { can, useMe } from '../lib/session.js';
import { Cell } from '../lib/stack.js';
import { Badge, ConfirmButton, Empty, ErrorNote, Field, Loading, OneTimeSecret, Page } from '../lib/ui.js';

/** The scopes of the specification (src/auth/permissions.ts SCOPES), grouped by what they open, with what each unlocks. */
export const SCOPE_GROUPS = [
  ['Endpoints', [['endpoints:read', 'list and get endpoints'], ['endpoints:write', 'create, edit, delete endpoints']]],
  ['Requests', [['requests:read', 'captured requests, forward answers, sample payloads'], ['requests:replay', 'replay a captured request (needs requests:read)']]],
  ['Destinations', [['destinations:read', 'list saved and attached destinations, agents'], ['destinations:write', 'create destinations, manage agents']]],
  ['Subscriptions', [['subscriptions:read', 'list subscriptions'], ['subscriptions:write', 'create and delete subscriptions']]],
  ['Incidents', [['incidents:read', 'list, get, sample and recent incidents'], ['incidents:write', 'change status, replay failures']]],
  ['Members', [['members:invite', 'invite members'], ['members:manage', 'list members, change roles, deactivate']]],
  ['Usage', [['usage:read', 'organization usage']]],
];
const ALL_SCOPES = SCOPE_GROUPS.flatMap(([, scopes]) => scopes.map(([s]) => s));
/** The dashboard's "Read + Notify" preset (docs/auth.md): read everything a notifier needs, and manage subscriptions. */
export const READ_NOTIFY = ['endpoints:read', 'requests:read', 'destinations:read', 'incidents:read', 'subscriptions:read', 'subscriptions:write'];

/** The specification's refusals of a scope set, with the API's own words; undefined when acceptable. */
export function scopeProblem(mode, scopes) {
  if (mode !== 'custom') return undefined;
  if (scopes.length === 0) return 'A custom-scope key needs at least one scope: with none it could call no scoped route.';
  if (scopes.includes('requests:replay') && !scopes.includes('requests:read')) return 'The scope requests:replay requires requests:read.';
  return undefined;
}

const inOrder = (scopes) => ALL_SCOPES.filter((s) => scopes.includes(s));

export function KeysPage() {
  const me = useMe();
  const manager = can(me, 'api_keys.manage');
  const keys = useLoad(() => api.get('/api-keys').then((r) => r.data.data), []);
  // owners' emails, for managers (who see every key of the organization); others see only their own
  const members = useLoad(() => (manager ? getAll('/members').catch(() => []) : Promise.resolve([])), [manager]);
  const [created, setCreated] = useState(null);
  const [editing, setEditing] = useState(null);
  const email = (id) => (id === me.member.id ? `${me.member.email} (you)` : members.data?.find((m) => m.id === id)?.email ?? id);

  const list = keys.data ?? [];
  const live = list.filter((k) => !k.revoked_at);
  const revoked = list.filter((k) => k.revoked_at);
  const editKey = list.find((k) => k.id === editing);
  return html`<${Page} title="API keys">
    <p class="muted">A key signs every API call and this dashboard in. It acts with its owner's role${manager ? '' : ' (yours)'}; a custom-scope key can do
      only what its scopes allow on top. ${manager ? 'You see every key of the organization.' : 'You see your own keys.'}</p>
    ${me.api_key.access_mode === 'custom'
      ? html`<p class="notice">You are signed in with a custom-scope key: key management is open to full-access keys only, so a narrowed key can never mint a wider one.</p>`
      : null}
    ${created ? html`<${OneTimeSecret} label=${`New key "${created.name}"${created.member_id !== me.member.id ? ` for ${email(created.member_id)}` : ''}`} value=${created.key}
      note="Shown only this once: copy it now. Weir keeps only its hash; lose it and make another." />` : null}
    <section aria-labelledby="keys-list">
      <h2 id="keys-list">Keys</h2>
      ${keys.error ? html`<${ErrorNote} error=${keys.error} />` : null}
      ${!keys.data ? (keys.error ? null : html`<${Loading} />`)
        : live.length === 0 ? html`<${Empty}>No active keys.<//>`
        : html`<${KeyTable} keys=${live} me=${me} manager=${manager} email=${email}
            onEdit=${setEditing} onRevoked=${(id) => {
              keys.setData((d) => d.map((k) => (k.id === id ? { ...k, revoked_at: new Date().toISOString() } : k)));
              if (editing === id) setEditing(null);
            }} />`}
      ${revoked.length > 0 ? html`<details class="revoked">
        <summary>Revoked keys (${revoked.length})</summary>
        <ul>${revoked.map((k) => html`<li key=${k.id}>${k.name} <code>${k.display_prefix}…</code>${manager ? ` · ${email(k.member_id)}` : ''} · revoked ${formatTime(k.revoked_at)}</li>`)}</ul>
      </details>` : null}
    </section>
    ${editKey ? html`<${EditAccess} key=${editKey.id} apiKey=${editKey} onDone=${(updated) => {
      if (updated) keys.setData((d) => d.map((k) => (k.id === updated.id ? updated : k)));
      setEditing(null);
    }} />` : null}
    ${me.api_key.access_mode === 'full' ? html`<${NewKey} me=${me} manager=${manager} members=${members.data ?? []} onCreated=${(k) => {
      setCreated(k);
      keys.reload();
    }} />` : null}
  <//>`;
}

function KeyTable({ keys, me, manager, email, onEdit, onRevoked }) {
  return html`<div class="table-wrap"><table class="stack" id="keys-table">
    <thead><tr>
      <th scope="col">Name</th><th scope="col">Key</th><th scope="col">Access</th>${manager ? html`<th scope="col">Owner</th>` : null}
      <th scope="col">Created</th><th scope="col">Expires</th><th scope="col">Last used</th><th scope="col"><span class="sr-only">Actions</span></th>
    </tr></thead>
    <tbody>${keys.map((k) => html`<${KeyRow} key=${k.id} k=${k} me=${me} manager=${manager} email=${email} onEdit=${onEdit} onRevoked=${onRevoked} />`)}</tbody>
  </table></div>`;
}

function KeyRow({ k, me, manager, email, onEdit, onRevoked }) {
  const revoke = useAction();
  const mine = k.id === me.api_key.id;
  return html`<tr data-id=${k.id}>
    <${Cell} label="Name"><strong>${k.name}</strong>${mine ? html` <${Badge} tone="ok">this browser<//>` : null}<//>
    <${Cell} label="Key" class="nowrap"><code>${k.display_prefix}…</code><//>
    <${Cell} label="Access">${k.access_mode === 'full' ? 'Full access' : html`Custom: <span class="scopes">${k.scopes.join(', ')}</span>`}<//>
    ${manager ? html`<${Cell} label="Owner">${email(k.member_id)}<//>` : null}
    <${Cell} label="Created" class="nowrap"><span title=${formatTime(k.created_at)}>${formatShortTime(k.created_at)}</span><//>
    <${Cell} label="Expires" class="nowrap">${k.expires_at
      ? html`<span title=${formatTime(k.expires_at)}>${formatShortTime(k.expires_at)}</span>${Date.parse(k.expires_at) <= Date.now() ? html` <${Badge} tone="bad">expired<//>` : null}`
      : 'never'}<//>
    <${Cell} label="Last used" class="nowrap">${k.last_used_at ? timeAgo(k.last_used_at) : 'never'}<//>
    <${Cell} label="Actions"><div class="actions">
      ${manager ? html`<button type="button" onClick=${() => onEdit(k.id)}>Edit access<span class="sr-only"> of ${k.name}</span></button>` : null}
      <${ConfirmButton} label=${'Revoke'} confirmLabel="Revoke key" busy=${revoke.busy}
        question=${mine ? `"${k.name}" is the key you are signed in with: revoking it signs you out. Revoke?` : `Revoke "${k.name}" for good?`}
        onConfirm=${() => revoke.run(async () => {
          await api.del(`/api-keys/${k.id}`);
          // the next request with a revoked key answers 401, which ends the session with its message
          if (mine) return api.get('/me').catch(() => undefined);
          onRevoked(k.id);
          return undefined;
        })} />
    </div><${ErrorNote} error=${revoke.error} /><//>
  </tr>`;
}

/** Access mode radios, then (custom) the scopes as labelled checkboxes by group, with the Read + Notify preset. */
function ScopePicker({ idPrefix, mode, setMode, scopes, setScopes }) {
  const toggle = (s, on) => setScopes((cur) => (on ? inOrder([...cur, s]) : cur.filter((x) => x !== s)));
  return html`<fieldset>
    <legend>Access mode</legend>
    <label class="check"><input type="radio" name=${idPrefix + '-mode'} value="full" checked=${mode === 'full'} onChange=${() => setMode('full')} />
      <span>Full access <span class="muted">(everything the owner's role allows)</span></span></label>
    <label class="check"><input type="radio" name=${idPrefix + '-mode'} value="custom" checked=${mode === 'custom'} onChange=${() => setMode('custom')} />
      <span>Custom scopes <span class="muted">(only what the scopes below allow)</span></span></label>
    ${mode === 'custom' ? html`<div class="scope-picker">
      <div class="actions">
        <button type="button" onClick=${() => setScopes([...READ_NOTIFY])}>Read + Notify</button>
        <button type="button" onClick=${() => setScopes([])}>Clear scopes</button>
        <span class="muted small">Read + Notify: read endpoints, requests, destinations and incidents, and manage subscriptions.</span>
      </div>
      <div class="scope-groups">
        ${SCOPE_GROUPS.map(([group, list]) => html`<fieldset key=${group} class="scope-group">
          <legend>${group}</legend>
          ${list.map(([s, what]) => html`<label class="check" key=${s}>
            <input type="checkbox" value=${s} checked=${scopes.includes(s)} onChange=${(e) => toggle(s, e.currentTarget.checked)} />
            <span><code>${s}</code> <span class="muted small">${what}</span></span>
          </label>`)}
        </fieldset>`)}
      </div>
    </div>` : null}
  </fieldset>`;
}

/**
 * The access mode and scopes a form edits: submit(send) checks them against
 * the specification's refusals and runs send() only when they pass.
 */
function useAccessForm(initialMode, initialScopes) {
  const [mode, setMode] = useState(initialMode);
  const [scopes, setScopes] = useState(initialScopes);
  const [problem, setProblem] = useState('');
  const action = useAction();
  return {
    action,
    problem,
    access: () => ({ access_mode: mode, ...(mode === 'custom' ? { scopes } : {}) }),
    submit: (send) => (e) => {
      e.preventDefault();
      const p = scopeProblem(mode, scopes);
      setProblem(p ?? '');
      action.clear();
      if (!p) action.run(send);
    },
    picker: {
      mode,
      setMode,
      scopes,
      setScopes: (fn) => {
        setProblem('');
        setScopes(fn);
      },
    },
    reset: () => {
      setMode('full');
      setScopes([]);
    },
  };
}

function AccessProblem({ id, problem }) {
  return problem ? html`<p class="error" role="alert" id=${id}>${problem}</p>` : null;
}

function NewKey({ me, manager, members, onCreated }) {
  const [name, setName] = useState('');
  const [expires, setExpires] = useState('');
  const [owner, setOwner] = useState('');
  const form = useAccessForm('full', []);
  const { action } = form;
  const submit = form.submit(async () => {
    const body = {
      name: name.trim(),
      ...form.access(),
      ...(expires ? { expires_at: new Date(expires).toISOString() } : {}),
      ...(owner && owner !== me.member.id ? { member_id: owner } : {}),
    };
    const k = (await api.post('/api-keys', body)).data;
    setName('');
    setExpires('');
    form.reset();
    onCreated(k);
  });
  const others = members.filter((m) => m.active && m.id !== me.member.id);
  return html`<section aria-labelledby="keys-new">
    <h2 id="keys-new">New key</h2>
    <form class="panel access-form" onSubmit=${submit}>
      <${Field} id="key-name" label="Name" hint="What uses it, e.g. “CI” or “Zapier”.">
        <input id="key-name" required maxlength="100" aria-describedby="key-name-hint" value=${name} onInput=${(e) => setName(e.currentTarget.value)} />
      <//>
      ${manager && others.length > 0 ? html`<${Field} id="key-owner" label="Owner" hint="A key for another member acts with the lower of their role and yours.">
        <select id="key-owner" aria-describedby="key-owner-hint" value=${owner} onChange=${(e) => setOwner(e.currentTarget.value)}>
          <option value="">Me (${me.member.email})</option>
          ${others.map((m) => html`<option key=${m.id} value=${m.id}>${m.email} (${m.role})</option>`)}
        </select>
      <//>` : null}
      <${ScopePicker} idPrefix="new" ...${form.picker} />
      <${Field} id="key-expires" label="Expires (optional)" hint="Your local time. Without it the key works until revoked.">
        <input id="key-expires" type="datetime-local" aria-describedby="key-expires-hint" value=${expires} onInput=${(e) => setExpires(e.currentTarget.value)} />
      <//>
      <div class="actions"><button type="submit" class="primary" disabled=${action.busy}>${action.busy ? 'Creating…' : 'Create key'}</button></div>
      <${AccessProblem} id="key-problem" problem=${form.problem} />
      <${ErrorNote} error=${action.error} id="key-error" />
    </form>
  </section>`;
}

function EditAccess({ apiKey, onDone }) {
  const form = useAccessForm(apiKey.access_mode, apiKey.scopes);
  const { action } = form;
  const heading = useRef(null);
  useEffect(() => {
    heading.current?.scrollIntoView({ block: 'nearest' });
    heading.current?.focus({ preventScroll: true });
  }, [apiKey.id]);
  const submit = form.submit(async () => onDone((await api.patch(`/api-keys/${apiKey.id}`, form.access())).data));
  return html`<section aria-labelledby="keys-edit" class="panel">
    <h2 id="keys-edit" tabindex="-1" ref=${heading}>Edit access of “${apiKey.name}”</h2>
    <p class="muted small">Takes effect on the key's next request, on every node.</p>
    <form onSubmit=${submit}>
      <${ScopePicker} idPrefix="edit" ...${form.picker} />
      <div class="actions">
        <button type="submit" class="primary" disabled=${action.busy}>Save access</button>
        <button type="button" onClick=${() => onDone(null)}>Cancel</button>
      </div>
      <${AccessProblem} id="edit-problem" problem=${form.problem} />
      <${ErrorNote} error=${action.error} id="edit-error" />
    </form>
  </section>`;
}
