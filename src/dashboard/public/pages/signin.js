// Sign-in with an API key, and the way back for someone who lost it: a key
// for a local install can be minted on the machine itself, no operator token.
import { api, session } from '../lib/api.js';
import { html, useState } from '../lib/html.js';
import { useAction } from '../lib/hooks.js';
import { ErrorNote, Field } from '../lib/ui.js';

export function SignIn({ reason }) {
  const [key, setKey] = useState('');
  const action = useAction();
  const submit = (e) => {
    e.preventDefault();
    const k = key.trim();
    action.run(async () => {
      // check the key before keeping it, so a typo is told here, not on every page
      await api.get('/me', { key: k });
      session.signIn(k);
    });
  };
  return html`<main class="page narrow signin" id="main">
    <h1>Sign in to Weir</h1>
    ${reason ? html`<p class="notice" role="alert">${reason}</p>` : null}
    <form onSubmit=${submit}>
      <${Field} id="key" label="API key" hint="It stays in this browser only (localStorage), and is sent to this Weir server alone.">
        <input id="key" name="key" type="password" autocomplete="off" required placeholder="wr_live_…" aria-describedby="key-hint"
          value=${key} onInput=${(e) => setKey(e.currentTarget.value)} />
      <//>
      <button type="submit" disabled=${action.busy}>${action.busy ? 'Signing in…' : 'Sign in'}</button>
      <${ErrorNote} error=${action.error} id="signin-error" />
    </form>
    <section aria-labelledby="no-key">
      <h2 id="no-key">No key, or lost it?</h2>
      <p>On a first start Weir prints a full-access key once. To mint another, run this on the machine that runs Weir, in the
        folder you start it from (it uses the same data directory, or <code>DATABASE_URL</code>, and needs no operator token):</p>
      <pre><code>npx weir keys create</code></pre>
      <p>With the embedded database (no <code>DATABASE_URL</code>), stop Weir first (Ctrl-C), run the command, then start Weir
        again: one process at a time may open the data directory. It prints a new full-access key for the first super admin
        of the first organization; see <code>npx weir keys create --help</code> for the options.</p>
    </section>
  </main>`;
}
