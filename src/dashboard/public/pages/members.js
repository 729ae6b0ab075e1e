// Members of the organization (/v1/members, docs/auth.md): the list, an
// invitation (which adds the member at once: Weir sends no email and no
// link; the new member signs in with a key, which an admin can mint here),
// role changes and deactivation. Nobody grants a role above their own; the
// API's refusals (403, the last super_admin's 409) show at the row.
import { api, getAll } from '../lib/api.js';
import { formatShortTime, formatTime } from '../lib/format.js';
import { html, useState } from '../lib/html.js';
import { useAction, useLoad } from '../lib/hooks.js';
import { can, useMe } from '../lib/session.js';
import { Cell } from '../lib/stack.js';
import { Badge, ConfirmButton, Empty, ErrorNote, Field, Loading, OneTimeSecret, Page } from '../lib/ui.js';

const ROLES = ['viewer', 'developer', 'admin', 'super_admin'];
const ROLE_SAYS = {
  viewer: 'reads everything, changes nothing',
  developer: 'creates and edits endpoints, destinations, subscriptions; replays',
  admin: 'also deletes endpoints, manages agents, members and every key',
  super_admin: 'everything; the organization keeps at least one',
};
/** The roles `role` may grant: its own and those below. */
const grantable = (role) => ROLES.slice(0, ROLES.indexOf(role) + 1);

export function MembersPage() {
  const me = useMe();
  const mayInvite = can(me, 'members.invite', 'members:invite');
  const mayManage = can(me, 'members.manage', 'members:manage');
  // a key for someone else: admins, with a full-access key (key management is closed to custom keys)
  const mayMintKeys = can(me, 'api_keys.manage') && me.api_key.access_mode === 'full';
  const list = useLoad(() => getAll('/members'), []);
  const [invited, setInvited] = useState(null);
  const replace = (m) => list.setData((d) => d.map((x) => (x.id === m.id ? m : x)));
  return html`<${Page} title="Members">
    <section aria-labelledby="members-list">
      <h2 id="members-list" class="sr-only">Members</h2>
      ${list.error ? html`<${ErrorNote} error=${list.error} />` : null}
      ${!list.data ? (list.error ? null : html`<${Loading} />`)
        : list.data.length === 0 ? html`<${Empty}>No members.<//>`
        : html`<div class="table-wrap"><table class="stack" id="members-table">
            <thead><tr><th scope="col">Email</th><th scope="col">Role</th><th scope="col">Status</th><th scope="col">Since</th>
              ${mayManage ? html`<th scope="col"><span class="sr-only">Actions</span></th>` : null}</tr></thead>
            <tbody>${list.data.map((m) => html`<${MemberRow} key=${m.id} m=${m} me=${me} mayManage=${mayManage} onChanged=${replace} />`)}</tbody>
          </table></div>`}
      ${mayManage ? null : html`<p class="muted">${me.member.role === 'viewer' || me.member.role === 'developer'
        ? `Your role (${me.api_key.effective_role}) can see the members; inviting and changing them needs an admin.`
        : 'Your key cannot change members (that needs the scope members:manage).'}</p>`}
    </section>
    ${mayInvite ? html`<${Invite} me=${me} mayMintKeys=${mayMintKeys} onInvited=${(m) => {
      setInvited(m);
      list.reload();
    }} />` : null}
    ${invited ? html`<${Invited} member=${invited} mayMintKeys=${mayMintKeys} />` : null}
  <//>`;
}

function MemberRow({ m, me, mayManage, onChanged }) {
  const you = m.id === me.member.id;
  const [role, setRole] = useState(m.role);
  const action = useAction();
  const options = grantable(me.api_key.effective_role);
  const patch = (body) =>
    action.run(async () => {
      onChanged((await api.patch(`/members/${m.id}`, body)).data);
      // deactivating yourself ends your keys: the next request answers 401, which returns to sign-in saying so
      if (you && body.active === false) await api.get('/me').catch(() => undefined);
    });
  const roleId = `role-${m.id}`;
  return html`<tr data-id=${m.id}>
    <${Cell} label="Email"><strong>${m.email}</strong>${you ? html` <${Badge} tone="ok">you<//>` : null}<//>
    <${Cell} label="Role">${m.role}<//>
    <${Cell} label="Status">${m.active ? html`<${Badge} tone="ok">active<//>` : html`<${Badge} tone="muted">deactivated<//>`}<//>
    <${Cell} label="Since" class="nowrap"><span title=${formatTime(m.created_at)}>${formatShortTime(m.created_at)}</span><//>
    ${mayManage ? html`<${Cell} label="Actions">
      <div class="actions">
        <span class="inline-field">
          <label for=${roleId} class="sr-only">Role of ${m.email}</label>
          <select id=${roleId} value=${role} onChange=${(e) => setRole(e.currentTarget.value)}>
            ${(options.includes(m.role) ? options : [...options, m.role]).map((r) => html`<option key=${r} value=${r}>${r}</option>`)}
          </select>
          <button type="button" disabled=${action.busy || role === m.role} onClick=${() => patch({ role })}>Change role<span class="sr-only"> of ${m.email}</span></button>
        </span>
        ${m.active
          ? html`<${ConfirmButton} label="Deactivate" confirmLabel="Deactivate" busy=${action.busy}
              question=${you ? 'Deactivate yourself? Your keys stop working at once.' : `Deactivate ${m.email}? Their keys stop working at once.`}
              onConfirm=${() => patch({ active: false })} />`
          : html`<button type="button" disabled=${action.busy} onClick=${() => patch({ active: true })}>Reactivate<span class="sr-only"> ${m.email}</span></button>`}
      </div>
      <${ErrorNote} error=${action.error} />
    <//>` : null}
  </tr>`;
}

function Invite({ me, onInvited }) {
  const [email, setEmail] = useState('');
  const [role, setRole] = useState('developer');
  const action = useAction();
  const options = grantable(me.api_key.effective_role);
  const submit = (e) => {
    e.preventDefault();
    action.run(async () => {
      const m = (await api.post('/members', { email: email.trim(), role })).data;
      setEmail('');
      onInvited(m);
    });
  };
  return html`<section aria-labelledby="members-invite">
    <h2 id="members-invite">Invite a member</h2>
    <form class="panel" onSubmit=${submit}>
      <${Field} id="invite-email" label="Email">
        <input id="invite-email" type="email" required autocomplete="off" value=${email} onInput=${(e) => setEmail(e.currentTarget.value)} />
      <//>
      <${Field} id="invite-role" label="Role" hint=${ROLE_SAYS[role]}>
        <select id="invite-role" aria-describedby="invite-role-hint" value=${role} onChange=${(e) => setRole(e.currentTarget.value)}>
          ${options.map((r) => html`<option key=${r} value=${r}>${r}</option>`)}
        </select>
      <//>
      <div class="actions"><button type="submit" class="primary" disabled=${action.busy}>${action.busy ? 'Inviting…' : 'Invite'}</button></div>
      <${ErrorNote} error=${action.error} id="invite-error" />
    </form>
  </section>`;
}

/** What an invitation did: the member exists, nothing was sent; how they get in. */
function Invited({ member, mayMintKeys }) {
  const [key, setKey] = useState(null);
  const action = useAction();
  const mint = () =>
    action.run(async () => setKey((await api.post('/api-keys', { name: `Dashboard key for ${member.email}`, member_id: member.id })).data.key));
  return html`<div class="panel">
    <p role="status"><strong>${member.email}</strong> is a member now, as ${member.role}. Weir sends no email and no invitation link:
      a member signs in with an API key.${mayMintKeys ? '' : ' Ask an admin to create one for them.'}</p>
    ${mayMintKeys && !key ? html`<button type="button" disabled=${action.busy} onClick=${mint}>Create a key for ${member.email}</button>` : null}
    <${ErrorNote} error=${action.error} />
    ${key ? html`<${OneTimeSecret} label=${`Key for ${member.email}`} value=${key}
      note="Shown only this once: give it to them over a channel you trust. It acts with the lower of their role and yours." />` : null}
  </div>`;
}
