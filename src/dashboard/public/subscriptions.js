// The subscriptions and usage view: the organization's REST-hook
// subscriptions (create with the secret shown once, rotate, delete, the
// failing / unsubscribed flags) and this month's usage against the plan's
// limits. Built from the DOM alone, like the incidents view; API text only
// ever goes through textContent.

const EVENT_TYPES = ['request.captured', 'request.forward_failed', 'incident.opened', 'incident.updated', 'incident.resolved', 'replay.completed'];

const fmtBytes = (n) => (n < 1024 ? `${n} B` : n < 1024 ** 2 ? `${(n / 1024).toFixed(1)} KiB` : n < 1024 ** 3 ? `${(n / 1024 ** 2).toFixed(1)} MiB` : `${(n / 1024 ** 3).toFixed(2)} GiB`);

/**
 * Adds a "Subscriptions & usage" button to the navigation the incidents
 * view made, and its section to the page. Call after initIncidents.
 */
export function initSubscriptions({ api, el }) {
  const nav = document.getElementById('nav');
  const open = el('button', 'Subscriptions & usage', { id: 'nav-subscriptions', type: 'button' });
  nav.append(open);

  const section = el('section', null, { id: 'subscriptions' });
  section.hidden = true;
  const usage = el('table', null, { id: 'usage' });
  const usageError = el('p', null, { class: 'error' });
  const list = el('tbody', null, { id: 'sub-list' });
  const table = el('table');
  const head = el('tr');
  for (const h of ['Target', 'Events', 'Endpoint', 'Status', '']) head.append(el('th', h));
  table.append(el('thead'), list);
  table.tHead.append(head);

  const form = el('form', null, { id: 'new-subscription' });
  const url = el('input', null, { id: 'sub-url', placeholder: 'https://hooks.example.com/weir', required: '' });
  const endpoint = el('select', null, { id: 'sub-endpoint' });
  const boxes = el('div', null, { id: 'sub-events' });
  for (const t of EVENT_TYPES) {
    const label = el('label');
    label.append(el('input', null, { type: 'checkbox', value: t }), ' ', t);
    boxes.append(label, ' ');
  }
  form.append(url, endpoint, boxes, el('button', 'Subscribe'));
  const formError = el('p', null, { class: 'error', id: 'sub-error' });
  const secretBox = el('div', null, { id: 'sub-secret-box' });
  secretBox.hidden = true;
  const secret = el('pre', null, { id: 'sub-secret' });
  secretBox.append(el('p', 'The signing secret, shown only this once: verify events with it (Standard Webhooks).'), secret);
  section.append(el('h2', 'Usage this month'), usage, usageError, el('h2', 'Subscriptions'), table, el('h3', 'New subscription'), form, formError, secretBox);
  document.querySelector('main').append(section);

  function showSecret(value) {
    secret.textContent = value;
    secretBox.hidden = false;
  }

  async function loadUsage() {
    usageError.textContent = '';
    try {
      const u = (await api('GET', '/usage')).data;
      const c = u.current_period;
      const p = u.previous_period;
      const rows = [
        ['Captures', c.captures, p.captures],
        ['Bytes captured', fmtBytes(c.bytes_captured), fmtBytes(p.bytes_captured)],
        ['Forwards attempted', c.forwards.attempted, p.forwards.attempted],
        ['Forwards succeeded', c.forwards.succeeded, p.forwards.succeeded],
        ['Forwards failed', c.forwards.failed, p.forwards.failed],
        ['Replayed', c.replayed, p.replayed],
      ];
      const thead = el('tr');
      for (const h of ['', `This month (plan ${u.plan})`, 'Last month']) thead.append(el('th', h));
      usage.replaceChildren(thead);
      for (const r of rows) {
        const tr = el('tr');
        for (const v of r) tr.append(el('td', v));
        usage.append(tr);
      }
      const limit = (name, l) => {
        const tr = el('tr', null, { class: l.used >= l.limit ? 'bad' : '' });
        tr.append(el('td', name), el('td', `${l.used} of ${l.limit}`), el('td', ''));
        usage.append(tr);
      };
      limit('Endpoints', u.limits.endpoints);
      limit('Production agents', u.limits.production_agents);
      const tr = el('tr');
      tr.append(el('td', 'Stored'), el('td', `${u.storage.captures_retained} captures, ${fmtBytes(u.storage.bytes_retained)}`), el('td', `kept ${u.storage.retention_days} days`));
      usage.append(tr);
    } catch (err) {
      usageError.textContent = err.message;
    }
  }

  async function loadEndpoints() {
    endpoint.replaceChildren(el('option', 'all endpoints', { value: '' }));
    for (const e of (await api('GET', '/endpoints')).data) endpoint.append(el('option', e.name, { value: e.id }));
  }

  async function loadList() {
    const subs = (await api('GET', '/subscriptions?limit=100')).data.data;
    list.replaceChildren();
    if (subs.length === 0) {
      const tr = el('tr');
      tr.append(el('td', 'No subscriptions yet.', { class: 'muted', colspan: '5' }));
      list.append(tr);
    }
    for (const s of subs) {
      const tr = el('tr', null, { 'data-id': s.id });
      const status = el('td', s.status, { class: s.status === 'active' ? 'ok' : 'bad' });
      if (s.status_reason) status.append(el('div', s.status_reason, { class: 'muted small' }));
      const actions = el('td');
      const rotate = el('button', 'Rotate secret', { type: 'button', 'data-action': 'rotate' });
      rotate.onclick = async () => {
        if (!confirm('Make a new secret? The old one keeps signing for 24 hours.')) return;
        showSecret((await api('POST', `/subscriptions/${s.id}/rotate-secret`)).data.secret);
      };
      const del = el('button', 'Delete', { type: 'button', class: 'danger', 'data-action': 'delete' });
      del.onclick = async () => {
        if (!confirm(`Stop sending events to ${s.target_url}?`)) return;
        await api('DELETE', `/subscriptions/${s.id}`);
        await loadList();
      };
      actions.append(rotate, ' ', del);
      tr.append(el('td', s.target_url), el('td', s.event_types.join(', ')), el('td', s.endpoint_id ?? 'all'), status, actions);
      list.append(tr);
    }
  }

  form.onsubmit = async (e) => {
    e.preventDefault();
    formError.textContent = '';
    try {
      const eventTypes = [...boxes.querySelectorAll('input:checked')].map((b) => b.value);
      const body = { target_url: url.value.trim(), event_types: eventTypes, ...(endpoint.value ? { endpoint_id: endpoint.value } : {}) };
      const created = (await api('POST', '/subscriptions', body)).data;
      showSecret(created.secret);
      url.value = '';
      for (const b of boxes.querySelectorAll('input')) b.checked = false;
      await loadList();
    } catch (err) {
      formError.textContent = err.message;
    }
  };

  const hide = () => {
    section.hidden = true;
    secretBox.hidden = true;
  };
  document.getElementById('nav-endpoints').addEventListener('click', hide);
  document.getElementById('nav-incidents').addEventListener('click', hide);
  open.onclick = () => {
    document.getElementById('app').hidden = true;
    const incidents = document.getElementById('incidents');
    if (incidents) incidents.hidden = true;
    section.hidden = false;
    Promise.all([loadUsage(), loadEndpoints(), loadList()]).catch((err) => (formError.textContent = err.message));
  };
}
