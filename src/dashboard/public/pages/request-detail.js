// One captured request: what arrived (method, path and query, time, source,
// size, headers in order), its body as pretty / raw / hex, copy as curl,
// download, replay, and its forward attempts (refreshed until all are final).
import { api } from '../lib/api.js';
import { INLINE_BODY_MAX, SHOW_MAX, captureUrl, curlCommand, hexDump, prettyBody } from '../lib/capture-view.js';
import { formatBytes, formatTime, plural, timeAgo } from '../lib/format.js';
import { html, useEffect, useMemo, useRef, useState } from '../lib/html.js';
import { useAction, useLoad, usePoll } from '../lib/hooks.js';
import { can, useMe } from '../lib/session.js';
import { Badge, CopyButton, ErrorNote, Field, Loading } from '../lib/ui.js';
import { VerificationBadge } from './endpoint-verification.js';
import { DuplicateOf, FilteredReason } from './endpoint-routing.js';

/** @param {{ requestId: string, endpoint: { id: string, name: string, ingest_url: string } }} props */
export function RequestDetail({ requestId, endpoint }) {
  const me = useMe();
  const req = useLoad((signal) => api.get(`/requests/${requestId}`, { signal }).then((r) => r.data), [requestId]);
  const heading = useRef(null);
  const r = req.data;
  // the detail takes the focus and is scrolled into view when it opens, wherever the row was
  useEffect(() => {
    if (!r) return;
    heading.current?.focus({ preventScroll: true });
    heading.current?.scrollIntoView({ block: 'nearest' });
  }, [r?.id]);
  if (req.error && !r) return html`<section class="req-detail" aria-label="Request"><${ErrorNote} error=${req.error} /></section>`;
  if (!r) return html`<section class="req-detail" aria-label="Request"><${Loading} label="Loading the request…" /></section>`;
  const target = (r.path || '/') + (r.query ? '?' + r.query : '');
  return html`<section class="req-detail" aria-labelledby="request-heading">
    <h2 id="request-heading" tabindex="-1" ref=${heading}><span class=${'method m-' + r.method.toLowerCase()}>${r.method}</span> <span class="req-target">${target}</span></h2>
    ${r.endpoint_id !== endpoint.id
      ? html`<p class="notice">This request was captured on another endpoint. <a href=${`/endpoints/${r.endpoint_id}/requests/${r.id}`}>Open it there</a>.</p>`
      : null}
    <dl class="props">
      <dt>Received</dt><dd><time datetime=${r.received_at}>${formatTime(r.received_at)}</time> <span class="muted">(${timeAgo(r.received_at)})</span></dd>
      <dt>Source IP</dt><dd>${r.source_ip || html`<span class="muted">unknown</span>`}</dd>
      <dt>Size</dt><dd>${r.body_size === 0 ? 'no body' : `${formatBytes(r.body_size)}${r.body_size >= 1024 ? ` (${r.body_size.toLocaleString()} bytes)` : ''}`}</dd>
      <dt>Content type</dt><dd>${r.content_type ? html`<code>${r.content_type}</code>` : html`<span class="muted">none</span>`}</dd>
      <dt>Request id</dt><dd><code>${r.id}</code></dd>
      ${r.verification ? html`<dt>Signature</dt><dd><${VerificationBadge} v=${r.verification} rejected=${r.rejected} /></dd>` : null}
      <${DuplicateOf} r=${r} />
    </dl>
    <${ReplayBox} r=${r} mayReplay=${can(me, 'requests.replay', 'requests:replay')} />
    <${BodyView} r=${r} />
    ${r.query ? html`<${QueryTable} query=${r.query} />` : null}
    <h3>Headers <span class="muted small">(${r.headers.length}, in the order received)</span></h3>
    <div class="table-wrap">
      <table class="headers-table">
        <thead><tr><th scope="col">Name</th><th scope="col">Value</th></tr></thead>
        <tbody>${r.headers.map((h) => html`<tr><td><code>${h.name}</code></td><td><code>${h.value}</code></td></tr>`)}</tbody>
      </table>
    </div>
    <${CurlBox} r=${r} endpoint=${endpoint} />
    <${Forwards} requestId=${r.id} duplicate=${!!r.duplicate_of} />
  </section>`;
}

function QueryTable({ query }) {
  let fields;
  try {
    fields = [...new URLSearchParams(query)];
  } catch {
    return null;
  }
  return html`<h3>Query parameters</h3>
    <div class="table-wrap"><table>
      <thead><tr><th scope="col">Name</th><th scope="col">Value</th></tr></thead>
      <tbody>${fields.map(([k, v]) => html`<tr><td><code>${k}</code></td><td><code>${v}</code></td></tr>`)}</tbody>
    </table></div>`;
}

const VIEWS = [
  { id: 'pretty', label: 'Pretty' },
  { id: 'raw', label: 'Raw' },
  { id: 'hex', label: 'Hex' },
];

function BodyView({ r }) {
  const pretty = useMemo(() => prettyBody(r), [r.id]);
  const [view, setView] = useState(pretty.kind === 'binary' ? 'hex' : 'pretty');
  const download = useAction();
  const save = () =>
    download.run(async () => {
      const blob = await (await api.raw(`/requests/${r.id}/body`)).blob();
      const url = URL.createObjectURL(blob);
      const a = document.createElement('a');
      a.href = url;
      a.download = `request-${r.id}.bin`;
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10_000);
    });
  return html`<section class="body-view" aria-labelledby="body-heading">
    <div class="body-head">
      <h3 id="body-heading">Body</h3>
      ${r.body_size > 0
        ? html`<div class="actions">
            <div class="seg" role="group" aria-label="Show the body as">
              ${VIEWS.map((v) => html`<button type="button" aria-pressed=${view === v.id ? 'true' : 'false'} onClick=${() => setView(v.id)}>${v.label}</button>`)}
            </div>
            <button type="button" disabled=${download.busy} onClick=${save}>Download body</button>
          </div>`
        : null}
    </div>
    <${ErrorNote} error=${download.error} />
    ${r.body_size === 0 ? html`<p class="muted no-body">No body.</p>` : null}
    ${r.body_size > 0 && view === 'pretty' ? html`<${Pretty} pretty=${pretty} r=${r} />` : null}
    ${r.body_size > 0 && view === 'raw'
      ? r.body_encoding === 'utf8'
        ? html`${r.body.length > SHOW_MAX ? html`<${CutNote} />` : null}<pre class="body" aria-label="Raw body"><code>${r.body.slice(0, SHOW_MAX)}</code></pre>`
        : html`<p class="muted">Binary body (${plural(r.body_size, 'byte')}, not valid UTF-8 text): see Hex, or download it.</p>`
      : null}
    ${r.body_size > 0 && view === 'hex' ? html`<${HexView} r=${r} />` : null}
  </section>`;
}

function Pretty({ pretty, r }) {
  switch (pretty.kind) {
    case 'json':
      return html`<p class="muted small">JSON, indented</p><pre class="body" aria-label="Body as indented JSON"><code>${pretty.text}</code></pre>`;
    case 'xml':
      return html`<p class="muted small">XML, indented</p><pre class="body" aria-label="Body as indented XML"><code>${pretty.text}</code></pre>`;
    case 'form':
      return html`<p class="muted small">Form fields (application/x-www-form-urlencoded, decoded)</p>
        <div class="table-wrap"><table class="form-table">
          <thead><tr><th scope="col">Field</th><th scope="col">Value</th></tr></thead>
          <tbody>${pretty.fields.map((f) => html`<tr><td><code>${f.name}</code></td><td><code>${f.value}</code></td></tr>`)}</tbody>
        </table></div>`;
    case 'binary':
      return html`<p class="muted small">Binary body: shown as hex.</p><${HexView} r=${r} />`;
    default:
      return html`${pretty.cut ? html`<${CutNote} />` : null}<pre class="body" aria-label="Body as text"><code>${pretty.text}</code></pre>`;
  }
}

function CutNote() {
  return html`<p class="muted small">The first ${SHOW_MAX.toLocaleString()} characters; download the body for all of it.</p>`;
}

const HEX_MAX = 64 * 1024;

/** The exact bytes, from GET /v1/requests/:id/body. */
function HexView({ r }) {
  const bytes = useLoad(async (signal) => new Uint8Array(await (await api.raw(`/requests/${r.id}/body`, { signal })).arrayBuffer()), [r.id]);
  if (bytes.error) return html`<${ErrorNote} error=${bytes.error} />`;
  if (!bytes.data) return html`<${Loading} />`;
  return html`${bytes.data.length > HEX_MAX ? html`<p class="muted small">The first ${HEX_MAX.toLocaleString()} of ${bytes.data.length.toLocaleString()} bytes; download the body for all of it.</p>` : null}
    <pre class="body hex" aria-label="Body as hex"><code>${hexDump(bytes.data, HEX_MAX)}</code></pre>`;
}

function CurlBox({ r, endpoint }) {
  const [url, setUrl] = useState(captureUrl(r, endpoint.ingest_url));
  const { command, file } = useMemo(() => curlCommand(r, url, { fileName: `request-${r.id}.bin` }), [r.id, url]);
  return html`<section class="curl" aria-labelledby="curl-heading">
    <h3 id="curl-heading">Copy as curl</h3>
    <${Field} id="curl-url" label="Send to" hint="The URL the command sends the request to: where it was captured, or your own server.">
      <input id="curl-url" type="url" value=${url} aria-describedby="curl-url-hint" onInput=${(e) => setUrl(e.currentTarget.value)} />
    <//>
    <pre class="curl-command" aria-label="curl command"><code id="curl-command">${command}</code></pre>
    <p class="muted small">
      Same method, headers (in order) and body, byte for byte, for bash or zsh.
      ${file ? ` The body (${r.body_size > INLINE_BODY_MAX ? 'large' : 'with NUL bytes'}) is read from ${file}: download it with "Download body" into the folder you run the command in.` : ''}
    </p>
    <${CopyButton} text=${command} label="Copy as curl" />
  </section>`;
}

function ReplayBox({ r, mayReplay }) {
  const action = useAction();
  const [result, setResult] = useState(null);
  if (!mayReplay) return null;
  const replay = () =>
    action.run(async () => {
      setResult(null);
      const res = (await api.post(`/requests/${r.id}/replay`)).data;
      setResult(res);
      // the forwards list starts refreshing again
      window.dispatchEvent(new CustomEvent('weir:replayed', { detail: r.id }));
    });
  return html`<div class="replay">
    <button type="button" disabled=${action.busy} onClick=${replay}>${action.busy ? 'Replaying…' : 'Replay'}</button>
    <span role="status" class="ok">${result ? `Queued ${plural(result.queued_count, 'forward')}: ${result.deliveries.map((d) => d.url ?? 'agent').join(', ')}. Their progress is under Forwards.` : ''}</span>
    <${ErrorNote} error=${action.error} id="replay-error" />
  </div>`;
}

const FINAL = new Set(['succeeded', 'failed', 'dead', 'superseded', 'skipped', 'filtered']);
const TONE = { succeeded: 'ok', failed: 'bad', dead: 'bad', superseded: 'muted', skipped: 'muted', pending: 'warn', in_flight: 'warn', filtered: 'muted' };

/** GET /v1/requests/:id/forwards, refreshed every 2 s until every forward is final (succeeded, failed or dead), then no more. */
function Forwards({ requestId, duplicate }) {
  const list = useLoad((signal) => api.get(`/requests/${requestId}/forwards?limit=100`, { signal }).then((x) => x.data.data), [requestId]);
  useEffect(() => {
    const again = (e) => e.detail === requestId && list.reload();
    window.addEventListener('weir:replayed', again);
    return () => window.removeEventListener('weir:replayed', again);
  }, [requestId]);
  const open = !!list.data && list.data.some((f) => !FINAL.has(f.status));
  usePoll(() => api.get(`/requests/${requestId}/forwards?limit=100`).then((x) => list.setData(x.data.data)), 2000, [requestId], open || !!list.error);
  return html`<section class="forwards" aria-labelledby="forwards-heading">
    <h3 id="forwards-heading">Forwards ${open ? html`<span class="muted small">(refreshing until all are final)</span>` : null}</h3>
    ${list.error ? html`<${ErrorNote} error=${list.error} />` : null}
    ${!list.data && !list.error ? html`<${Loading} />` : null}
    ${list.data && list.data.length === 0
      ? html`<p class="muted">${duplicate ? 'Not forwarded: a duplicate of an earlier capture (deduplication).' : 'Not forwarded: the endpoint had no forward URL or enabled destination when this arrived.'}</p>`
      : null}
    ${list.data?.map(
      (f) => html`<div class="forward" key=${f.id}>
        <p>
          <strong>${f.destination_name}</strong> → <code>${f.url ?? (f.agent_id ? 'agent ' + f.agent_id : '')}</code>
          <${Badge} tone=${TONE[f.status] ?? 'muted'}>${f.status.replace('_', ' ')}<//>
          <span class="muted">${plural(f.attempt_count, 'attempt')}${f.next_attempt_at && !FINAL.has(f.status) ? ` · next ${formatTime(f.next_attempt_at)}` : ''}${f.replay_batch_id ? ' · replay' : ''}</span>
        </p>
        ${f.status === 'skipped' && f.last_error ? html`<p class="muted small" data-skipped>${f.last_error}</p>` : null}
        <${FilteredReason} f=${f} />
        ${f.attempts.length > 0
          ? html`<div class="table-wrap"><table>
              <thead><tr><th scope="col">#</th><th scope="col">Started</th><th scope="col">Result</th><th scope="col">Duration</th><th scope="col">Error</th></tr></thead>
              <tbody>${f.attempts.map(
                (a) => html`<tr>
                  <td>${a.attempt_number}</td>
                  <td>${formatTime(a.started_at)}</td>
                  <td>${a.status_code ?? a.error_class ?? ''}${a.transformation_hash
                    ? html` <span class="muted small" data-transformation title=${'Transformed by the code version ' + a.transformation_hash}>transformed <code>${a.transformation_hash.slice(0, 12)}</code></span>`
                    : null}</td>
                  <td>${a.duration_ms} ms</td>
                  <td>${a.error_message ?? ''}</td>
                </tr>`,
              )}</tbody>
            </table></div>`
          : null}
      </div>`,
    )}
  </section>`;
}
