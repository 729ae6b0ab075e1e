// Usage: what the organization used this billing period (a calendar month,
// UTC), per day and in total, against its plan's limits (GET /v1/usage and
// /v1/me's organization.limits). Every bar has its figure written beside it
// or in the table under it: nothing is told by colour or length alone.
import { api } from '../lib/api.js';
import { formatBytes } from '../lib/format.js';
import { html } from '../lib/html.js';
import { useLoad, usePoll } from '../lib/hooks.js';
import { useMe } from '../lib/session.js';
import { ErrorNote, Loading, Page } from '../lib/ui.js';

const num = (n) => Number(n).toLocaleString('en');
const pct = (used, limit) => (limit > 0 ? Math.min(100, Math.round((used / limit) * 100)) : used > 0 ? 100 : 0);
const dayLabel = (day) => new Date(day + 'T00:00:00Z').toLocaleDateString('en', { month: 'short', day: 'numeric', timeZone: 'UTC' });
const periodLabel = (p) => {
  const last = new Date(Date.parse(p.end) - 86_400_000).toISOString().slice(0, 10);
  return `${dayLabel(p.start.slice(0, 10))} – ${dayLabel(last)} ${p.start.slice(0, 4)} (UTC)`;
};

export function UsagePage() {
  const me = useMe();
  const usage = useLoad(() => api.get('/usage').then((r) => r.data), []);
  usePoll(usage.reload, 30000, []);
  const u = usage.data;
  return html`<${Page} title="Usage">
    ${usage.error ? html`<${ErrorNote} error=${usage.error} />` : null}
    ${!u ? (usage.error ? null : html`<${Loading} />`) : html`
      <p>Plan <strong>${u.plan}</strong> · this period ${periodLabel(u.current_period)}. Counts refresh every 30 seconds.</p>
      <${Limits} u=${u} limits=${me.organization.limits} />
      <${Totals} u=${u} />
      <${PerDay} days=${u.days ?? []} />`}
  <//>`;
}

/** One limit: "4 of 50 endpoints (8 %)" with a bar, and what happens at the limit. */
function Meter({ label, used, limit, unit, atLimit }) {
  const p = pct(used, limit);
  const full = used >= limit;
  return html`<li class="meter">
    <div class="meter-text"><strong>${label}</strong> <span>${num(used)} of ${num(limit)} ${unit} used (${p} %)</span></div>
    <div class="bar" aria-hidden="true"><span class=${full ? 'full' : p >= 80 ? 'high' : ''} style=${{ width: `${p}%` }}></span></div>
    ${full ? html`<p class="bad small">Limit reached: ${atLimit}</p>` : p >= 80 ? html`<p class="warn-text small">Close to the limit.</p>` : null}
  </li>`;
}

function Limits({ u, limits }) {
  const l = u.limits;
  return html`<section aria-labelledby="usage-limits">
    <h2 id="usage-limits">Plan limits</h2>
    <ul class="meters">
      <${Meter} label="Endpoints" used=${l.endpoints.used} limit=${l.endpoints.limit} unit="endpoints"
        atLimit="creating another endpoint is refused (paused endpoints count too)." />
      <${Meter} label="Production agents" used=${l.production_agents.used} limit=${l.production_agents.limit} unit="agents"
        atLimit="enrolling another production agent is refused; development agents do not count." />
    </ul>
    <dl class="props">
      <dt>Forward destinations</dt><dd>up to ${num(l.forward_destinations_per_endpoint?.limit ?? limits.max_forward_destinations)} per endpoint</dd>
      <dt>Retention</dt><dd>${num(u.storage.retention_days)} days: ${num(u.storage.captures_retained)} captures stored now (${formatBytes(u.storage.bytes_retained)} of bodies)</dd>
      <dt>Incident replay</dt><dd>${l.incident_replay ? 'included in this plan' : 'not included in this plan (Starter and above)'}</dd>
    </dl>
  </section>`;
}

function Totals({ u }) {
  const c = u.current_period;
  const p = u.previous_period;
  const rows = [
    ['Captures', num(c.captures), num(p.captures)],
    ['Bytes captured', formatBytes(c.bytes_captured), formatBytes(p.bytes_captured)],
    ['Forwards attempted', num(c.forwards.attempted), num(p.forwards.attempted)],
    ['Forwards succeeded', num(c.forwards.succeeded), num(p.forwards.succeeded)],
    ['Forwards failed', num(c.forwards.failed), num(p.forwards.failed)],
    ['Replayed', num(c.replayed), num(p.replayed)],
  ];
  return html`<section aria-labelledby="usage-totals">
    <h2 id="usage-totals">This period and the last</h2>
    <div class="table-wrap"><table class="figures" id="usage-totals-table">
      <thead><tr><th scope="col">Counted</th><th scope="col">This month</th><th scope="col">Last month</th></tr></thead>
      <tbody>${rows.map(([name, cur, prev]) => html`<tr key=${name}><th scope="row">${name}</th><td>${cur}</td><td>${prev}</td></tr>`)}</tbody>
    </table></div>
  </section>`;
}

/** A column chart of one figure per day (drawn for the eye, hidden from screen readers), captioned with its total and peak. */
function DayChart({ title, days, value, failed }) {
  const values = days.map(value);
  const max = Math.max(1, ...values);
  const total = values.reduce((a, b) => a + b, 0);
  const peak = values.indexOf(Math.max(...values));
  const failedTotal = failed ? days.map(failed).reduce((a, b) => a + b, 0) : 0;
  return html`<figure class="daychart">
    <figcaption><strong>${title}</strong>: ${num(total)} this period${total > 0 ? `, most on ${dayLabel(days[peak].day)} (${num(values[peak])})` : ''}${failed ? `; ${num(failedTotal)} failed (striped)` : ''}</figcaption>
    <div class="columns" aria-hidden="true">
      ${days.map((d, i) => html`<div class="col" key=${d.day} title=${`${dayLabel(d.day)}: ${num(values[i])}`}>
        <span class="fill" style=${{ height: `${(values[i] / max) * 100}%` }}>
          ${failed && failed(d) > 0 ? html`<span class="failed" style=${{ height: `${(failed(d) / Math.max(1, values[i])) * 100}%` }}></span>` : null}
        </span>
      </div>`)}
    </div>
    <div class="axis" aria-hidden="true"><span>${days.length ? dayLabel(days[0].day) : ''}</span><span>${days.length ? dayLabel(days.at(-1).day) : ''}</span></div>
  </figure>`;
}

function PerDay({ days }) {
  if (days.length === 0) return null;
  return html`<section aria-labelledby="usage-days">
    <h2 id="usage-days">Per day</h2>
    <div class="daycharts">
      <${DayChart} title="Captures" days=${days} value=${(d) => d.captures} />
      <${DayChart} title="Forwards" days=${days} value=${(d) => d.forwards.attempted} failed=${(d) => d.forwards.failed} />
      <${DayChart} title="Replays" days=${days} value=${(d) => d.replayed} />
    </div>
    <details>
      <summary>Every day's figures</summary>
      <div class="table-wrap"><table class="figures" id="usage-days-table">
        <thead><tr><th scope="col">Day (UTC)</th><th scope="col">Captures</th><th scope="col">Bytes</th><th scope="col">Forwards</th><th scope="col">Failed</th><th scope="col">Replays</th></tr></thead>
        <tbody>${days.slice().reverse().map((d) => html`<tr key=${d.day}>
          <th scope="row">${dayLabel(d.day)}</th><td>${num(d.captures)}</td><td>${formatBytes(d.bytes_captured)}</td>
          <td>${num(d.forwards.attempted)}</td><td>${num(d.forwards.failed)}</td><td>${num(d.replayed)}</td>
        </tr>`)}</tbody>
      </table></div>
    </details>
  </section>`;
}
