// Small components every page is built from. Each one is accessible on its
// own: labelled inputs, live regions for what changes, real buttons and links.
// API text is always passed as children or attributes (Preact sets them as
// text), never as markup.
import { html, useEffect, useRef, useState } from './html.js';

/**
 * A page: its <h1> (focused when the page opens, so a screen reader announces
 * it and Tab starts from it), optional actions beside it, then the content.
 */
export function Page({ title, actions, children, wide = false }) {
  const heading = useRef(null);
  useEffect(() => {
    document.title = `${title} · Weir`;
    heading.current?.focus({ preventScroll: true });
  }, [title]);
  return html`<div class=${'page' + (wide ? ' wide' : '')}>
    <div class="page-head">
      <h1 tabindex="-1" ref=${heading}>${title}</h1>
      ${actions ? html`<div class="actions">${actions}</div>` : null}
    </div>
    ${children}
  </div>`;
}

/** An error from the API (or anything thrown), shown where the action was. */
export function ErrorNote({ error, id }) {
  if (!error) return null;
  const hint = error.code === 'forbidden' ? ' Ask an admin for a key or role that allows it.' : '';
  return html`<p class="error" role="alert" id=${id}>${error.message || String(error)}${hint}</p>`;
}

/** A detail page whose record has not arrived: loading, or the error that stopped it, under a link back to its list. */
export function PendingPage({ title, back, backLabel, load }) {
  return html`<${Page} title=${title}>
    <p><a href=${back}>${backLabel}</a></p>
    ${load.error ? html`<${ErrorNote} error=${load.error} />` : html`<${Loading} />`}
  <//>`;
}

export function Loading({ label = 'Loading…' }) {
  return html`<p class="muted" role="status" aria-live="polite">${label}</p>`;
}

export function Empty({ children }) {
  return html`<p class="empty muted">${children}</p>`;
}

/**
 * Copies `text` and says so next to the button for two seconds. `name`: an
 * accessible name when several Copy buttons share a page (it should start
 * with the visible label).
 */
export function CopyButton({ text, label = 'Copy', name, class: cls = '' }) {
  const [said, setSaid] = useState('');
  useEffect(() => {
    if (!said) return undefined;
    const t = setTimeout(() => setSaid(''), 2000);
    return () => clearTimeout(t);
  }, [said]);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
      setSaid('Copied');
    } catch {
      // clipboard refused (no permission, plain http on another host): select it for the user instead
      setSaid('Copy failed: select the text and copy it');
    }
  };
  return html`<span class="copy"><button type="button" class=${cls} aria-label=${name} onClick=${copy}>${label}</button><span class="copied" role="status" aria-live="polite">${said}</span></span>`;
}

/** A labelled form field; `children` is the control, which must carry `id`. */
export function Field({ id, label, hint, children }) {
  return html`<div class="field">
    <label for=${id}>${label}</label>
    ${children}
    ${hint ? html`<small class="hint" id=${id + '-hint'}>${hint}</small>` : null}
  </div>`;
}

/**
 * A destructive action that asks before doing it, inline (no window.confirm,
 * which a keyboard or screen-reader user can lose): the first press shows
 * "Confirm …" and "Cancel"; the confirm runs onConfirm.
 */
export function ConfirmButton({ label, confirmLabel, question, onConfirm, busy = false, id }) {
  const [asking, setAsking] = useState(false);
  const confirm = useRef(null);
  useEffect(() => {
    if (asking) confirm.current?.focus();
  }, [asking]);
  if (!asking) return html`<button type="button" class="danger" id=${id} onClick=${() => setAsking(true)}>${label}</button>`;
  return html`<span class="confirm" role="group" aria-label=${question}>
    <span>${question}</span>
    <button type="button" class="danger" ref=${confirm} disabled=${busy} onClick=${async () => {
      await onConfirm();
      setAsking(false);
    }}>${confirmLabel ?? 'Confirm'}</button>
    <button type="button" onClick=${() => setAsking(false)}>Cancel</button>
  </span>`;
}

/** A status pill; `tone` is one of ok, bad, warn, muted. */
export function Badge({ tone = 'muted', children }) {
  return html`<span class=${'badge ' + tone}>${children}</span>`;
}

/** Tabs as links (each its own URL), marked for assistive technology. */
export function TabLinks({ label, tabs, current }) {
  return html`<nav class="tabs" aria-label=${label}>
    ${tabs.map((t) => html`<a href=${t.href} aria-current=${t.id === current ? 'page' : undefined}>${t.label}</a>`)}
  </nav>`;
}

/** A secret shown this once (a new key, token or signing secret), with a copy button. */
export function OneTimeSecret({ label, value, note = 'Shown only this once: copy it now.' }) {
  return html`<div class="secret" role="status">
    <p><strong>${label}</strong> ${note}</p>
    <pre><code>${value}</code></pre>
    <${CopyButton} text=${value} />
  </div>`;
}
