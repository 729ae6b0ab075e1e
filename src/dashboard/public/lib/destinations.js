// What the destinations library page and an endpoint's Destinations tab share:
// the fields of a saved HTTPS destination, and how a saved destination reads.
import { html } from './html.js';
import { Field } from './ui.js';

export const VISIBILITIES = [
  ['org', 'Organization: every member'],
  ['restricted', 'Restricted: you, admins and super admins'],
  ['private', 'Private: you and super admins'],
];

export const visibilityLabel = (v) => (VISIBILITIES.find(([k]) => k === v)?.[1] ?? v).split(':')[0];

export const emptySaved = () => ({ name: '', url: 'https://', visibility: 'org', is_reusable: true });

/**
 * Name, URL, visibility and reusability of a saved destination. `value` is
 * {name, url, visibility, is_reusable}; `onChange` gets the whole new value.
 * `prefix` keeps the ids unique when two forms are on one page.
 */
export function SavedFields({ prefix, value, onChange }) {
  const set = (k) => (e) => onChange({ ...value, [k]: e.currentTarget.type === 'checkbox' ? e.currentTarget.checked : e.currentTarget.value });
  return html`
    <${Field} id=${prefix + '-name'} label="Name">
      <input id=${prefix + '-name'} required maxlength="100" value=${value.name} onInput=${set('name')} />
    <//>
    <${Field} id=${prefix + '-url'} label="URL" hint="An https:// address; webhooks are sent to it as they were captured.">
      <input id=${prefix + '-url'} type="url" required maxlength="2048" inputmode="url" aria-describedby=${prefix + '-url-hint'} value=${value.url} onInput=${set('url')} />
    <//>
    <${Field} id=${prefix + '-visibility'} label="Who sees it in the library">
      <select id=${prefix + '-visibility'} value=${value.visibility} onChange=${set('visibility')}>
        ${VISIBILITIES.map(([v, label]) => html`<option value=${v}>${label}</option>`)}
      </select>
    <//>
    <label class="check"><input type="checkbox" checked=${value.is_reusable} onChange=${set('is_reusable')} /> Reusable: may be attached to more than one endpoint</label>`;
}
