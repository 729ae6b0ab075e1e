// An endpoint's signature verification (docs/verification.md): the provider,
// its secret (a password field: the API never returns it, only its last four
// characters), enforce and the timestamp tolerance. Leaving the secret empty
// keeps the stored one; the API checks every rule and its 400 is shown as is.
import { api } from '../lib/api.js';
import { html, useState } from '../lib/html.js';
import { fieldSetter, useAction } from '../lib/hooks.js';
import { ErrorNote, Field } from '../lib/ui.js';

const PROVIDERS = {
  stripe: 'Stripe',
  github: 'GitHub',
  shopify: 'Shopify',
  slack: 'Slack',
  standard_webhooks: 'Standard Webhooks (Svix, Resend, ...)',
  twilio: 'Twilio',
  hmac: 'Generic HMAC',
};
const TIMESTAMPED = new Set(['stripe', 'slack', 'standard_webhooks']);

function formOf(v) {
  return {
    provider: v?.provider ?? '',
    secret: '',
    enforce: v?.enforce ?? false,
    tolerance: String(v?.tolerance_seconds ?? 300),
    header: v?.header ?? '',
    algorithm: v?.algorithm ?? 'sha256',
    encoding: v?.encoding ?? 'hex',
    prefix: v?.prefix ?? '',
  };
}

export function VerificationSettings({ endpoint, mayEdit, onSaved }) {
  const current = endpoint.verification;
  const [values, setValues] = useState(formOf(current));
  const [saved, setSaved] = useState('');
  const action = useAction();
  const set = fieldSetter(setValues, () => setSaved(''));
  const submit = (e) => {
    e.preventDefault();
    setSaved('');
    action.run(async () => {
      let verification = null;
      if (values.provider) {
        verification = { provider: values.provider, enforce: values.enforce };
        if (values.secret) verification.secret = values.secret;
        if (TIMESTAMPED.has(values.provider)) verification.tolerance_seconds = Number(values.tolerance);
        if (values.provider === 'hmac') Object.assign(verification, { header: values.header, algorithm: values.algorithm, encoding: values.encoding, prefix: values.prefix || null });
      }
      const updated = (await api.patch(`/endpoints/${endpoint.id}`, { verification })).data;
      onSaved(updated);
      // the secret field is emptied: what was typed is not kept in the page
      setValues(formOf(updated.verification));
      setSaved('Saved.');
    });
  };
  const keeps = current && current.provider === values.provider;
  return html`<section aria-labelledby="verification-heading">
    <h2 id="verification-heading">Signature verification</h2>
    <p class="muted">Check each capture's signature with the provider's signing secret: captures are marked verified or failed, and forwards carry a Weir-Verification header. See docs/verification.md.</p>
    <form onSubmit=${submit}>
      <fieldset disabled=${!mayEdit} class="plain">
        <legend class="visually-hidden">Signature verification</legend>
        <${Field} id="verification-provider" label="Provider">
          <select id="verification-provider" value=${values.provider} onChange=${set('provider')}>
            <option value="">None (no verification)</option>
            ${Object.entries(PROVIDERS).map(([value, label]) => html`<option value=${value}>${label}</option>`)}
          </select>
        <//>
        ${values.provider
          ? html`
            <${Field} id="verification-secret" label="Signing secret" hint=${keeps ? `Stored, ending in …${current.secret_last4}. Leave empty to keep it.` : 'Never shown again once saved.'}>
              <input id="verification-secret" type="password" autocomplete="off" spellcheck="false" aria-describedby="verification-secret-hint" required=${!keeps}
                value=${values.secret} onInput=${set('secret')} />
            <//>
            <div class="field">
              <label><input type="checkbox" id="verification-enforce" checked=${values.enforce} onChange=${set('enforce')} /> Enforce: answer 401 to requests that fail, and do not forward them (they are still stored)</label>
            </div>
            ${TIMESTAMPED.has(values.provider)
              ? html`<${Field} id="verification-tolerance" label="Timestamp tolerance (seconds)" hint="How far the signed timestamp may be from now; default 300.">
                  <input id="verification-tolerance" type="number" min="1" max="86400" aria-describedby="verification-tolerance-hint" value=${values.tolerance} onInput=${set('tolerance')} />
                <//>`
              : null}
            ${values.provider === 'hmac'
              ? html`
                <${Field} id="verification-header" label="Signature header">
                  <input id="verification-header" placeholder="X-Signature" value=${values.header} onInput=${set('header')} />
                <//>
                <${Field} id="verification-algorithm" label="Algorithm">
                  <select id="verification-algorithm" value=${values.algorithm} onChange=${set('algorithm')}>
                    ${['sha1', 'sha256', 'sha512'].map((a) => html`<option value=${a}>${a}</option>`)}
                  </select>
                <//>
                <${Field} id="verification-encoding" label="Encoding">
                  <select id="verification-encoding" value=${values.encoding} onChange=${set('encoding')}>
                    ${['hex', 'base64'].map((a) => html`<option value=${a}>${a}</option>`)}
                  </select>
                <//>
                <${Field} id="verification-prefix" label="Prefix (optional)">
                  <input id="verification-prefix" placeholder="sha256=" value=${values.prefix} onInput=${set('prefix')} />
                <//>`
              : null}`
          : null}
      </fieldset>
      <div class="actions">
        <button type="submit" disabled=${!mayEdit || action.busy}>${action.busy ? 'Saving…' : 'Save verification'}</button>
        <span class="ok" role="status">${saved}</span>
      </div>
      <${ErrorNote} error=${action.error} id="verification-error" />
    </form>
  </section>`;
}

/** A capture's verification result as a badge, with the reason in words; nothing for an endpoint without verification. */
const REASONS = {
  missing_signature: 'no signature header',
  bad_signature: 'signature does not match',
  timestamp_out_of_tolerance: 'timestamp too old or too new',
  malformed_signature: 'signature header malformed',
};
export function VerificationBadge({ v, rejected }) {
  if (!v) return null;
  if (v.status === 'verified') return html`<span class="badge ok" data-verification="verified" title="Signature verified">verified</span>`;
  const why = REASONS[v.reason] ?? v.reason;
  return html`<span class="badge bad" data-verification="failed" title=${`Signature verification failed: ${why}${rejected ? ' (refused with 401, not forwarded)' : ''}`}
    >${rejected ? 'rejected' : 'unverified'}: ${why}</span>`;
}
