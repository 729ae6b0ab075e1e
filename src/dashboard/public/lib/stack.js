// Tables whose rows turn into labelled blocks on a phone (table.stack in
// app.css): each cell names its column, which the small screen shows
// before the value, since the header row is then hidden.
import { html } from './html.js';

/** One cell of a table.stack row; `label` is its column's name. */
export function Cell({ label, class: cls, children }) {
  return html`<td data-label=${label} class=${cls}><div class="cell">${children}</div></td>`;
}
