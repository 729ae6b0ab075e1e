// The incidents view: list, detail with timeline and failures, status
// changes, notes and a paced replay with a rate picker that shows how long
// the batch would take. Built from the DOM alone (the page's markup stays
// the endpoints view's); API text only ever goes through textContent.

const STATUS_ACTIONS = [
  ['investigating', 'Investigate'],
  ['resolved', 'Resolve'],
  ['open', 'Reopen'],
];

/** "about 2 h 5 min" for a number of minutes, as the API's messages say it. */
export function formatDuration(minutes) {
  if (minutes < 1) return `${Math.max(1, Math.round(minutes * 60))} s`;
  if (minutes < 60) return `${Math.round(minutes)} min`;
  const h = Math.floor(minutes / 60);
  const m = Math.round(minutes - h * 60);
  return m ? `${h} h ${m} min` : `${h} h`;
}

/**
 * Adds the Endpoints / Incidents navigation to the header and the incidents
 * section to the page. `api(method, path, body)` and `el(tag, text, attrs)`
 * are the page's own helpers.
 */
export function initIncidents({ api, el }) {
  const endpointsView = document.getElementById('app');
  const nav = el('nav', null, { id: 'nav' });
  nav.hidden = true; // shown once signed in
  const toEndpoints = el('button', 'Endpoints', { id: 'nav-endpoints', type: 'button' });
  const toIncidents = el('button', 'Incidents', { id: 'nav-incidents', type: 'button' });
  nav.append(toEndpoints, toIncidents);
  document.getElementById('who').after(nav);

  const section = el('section', null, { id: 'incidents' });
  section.hidden = true;
  const filter = el('select', null, { id: 'inc-filter' });
  for (const s of ['open', 'investigating', 'resolved', 'all']) filter.append(el('option', s, { value: s }));
  const list = el('tbody', null, { id: 'inc-list' });
  const table = el('table');
  const head = el('tr');
  for (const h of ['Status', 'Destination', 'Likely cause', 'Failures', 'Endpoints', 'Last failure']) head.append(el('th', h));
  table.append(el('thead'), list);
  table.tHead.append(head);
  const more = el('button', 'Older', { id: 'inc-more', type: 'button' });
  more.hidden = true;
  const listError = el('p', null, { class: 'error' });
  const detail = el('div', null, { id: 'inc-detail' });
  detail.hidden = true;
  section.append(el('h2', 'Incidents'), el('label', 'Show '), filter, table, more, listError, detail);
  document.querySelector('main').append(section);

  const state = { cursor: null, incident: null };

  function show(view) {
    endpointsView.hidden = view !== 'endpoints';
    section.hidden = view !== 'incidents';
    if (view === 'incidents') loadList().catch((err) => (listError.textContent = err.message));
  }
  toEndpoints.onclick = () => show('endpoints');
  toIncidents.onclick = () => show('incidents');
  filter.onchange = () => loadList().catch((err) => (listError.textContent = err.message));
  more.onclick = () => loadList(state.cursor).catch((err) => (listError.textContent = err.message));

  async function loadList(before) {
    listError.textContent = '';
    const page = (await api('GET', `/incidents?status=${filter.value}&limit=25${before ? `&before=${before}` : ''}`)).data;
    if (!before) list.replaceChildren();
    if (!before && page.data.length === 0) {
      const tr = el('tr', null, { class: 'muted' });
      tr.append(el('td', `No ${filter.value === 'all' ? '' : filter.value + ' '}incidents.`));
      list.append(tr);
    }
    for (const i of page.data) {
      const tr = el('tr', null, { 'data-id': i.id });
      for (const c of [i.status, i.destination_name ?? '', i.likely_cause, i.failure_count, i.endpoint_count, new Date(i.last_failure_at).toLocaleString()]) tr.append(el('td', c));
      tr.onclick = () => showIncident(i.id).catch((err) => (listError.textContent = err.message));
      list.append(tr);
    }
    state.cursor = page.meta.next_cursor;
    more.hidden = !page.meta.has_more;
  }

  async function showIncident(id) {
    const inc = (await api('GET', `/incidents/${id}`)).data;
    state.incident = inc;
    detail.hidden = false;
    const error = el('p', null, { class: 'error', id: 'inc-error' });
    const fail = (err) => (error.textContent = err.message);

    const summary = el('div');
    summary.append(
      el('h3', `${inc.destination_name ?? 'Destination'} · ${inc.status}`, { id: 'inc-title' }),
      el('p', inc.likely_cause, { id: 'inc-cause' }),
      el('p', `${inc.failure_count} failures on ${inc.endpoint_count} endpoint(s), ${new Date(inc.first_failure_at).toLocaleString()} to ${new Date(inc.last_failure_at).toLocaleString()}` +
        (inc.asn !== null ? ` · AS${inc.asn} ${inc.asn_org ?? ''}` : '') + (inc.is_recurring ? ' · recurring' : ''), { class: 'muted' }),
    );

    const actions = el('p');
    for (const [status, label] of STATUS_ACTIONS) {
      if (status === inc.status) continue;
      const b = el('button', label, { type: 'button', 'data-status': status });
      b.onclick = () => api('PATCH', `/incidents/${id}`, { status }).then(() => Promise.all([showIncident(id), loadList()])).catch(fail);
      actions.append(b, ' ');
    }

    // replay: a rate picker with the batch's estimated duration
    const replay = el('form', null, { id: 'inc-replay' });
    const rate = el('input', null, { id: 'inc-rate', type: 'number', min: '1', max: '6000', value: '60', required: '' });
    const estimate = el('span', null, { id: 'inc-estimate', class: 'muted' });
    const updateEstimate = () => {
      const r = Number(rate.value);
      const n = inc.unreplayed_count;
      if (!Number.isInteger(r) || r < 1 || r > 6000) estimate.textContent = 'a whole number from 1 to 6000 per minute';
      else if (n === 0) estimate.textContent = 'nothing left to replay';
      else estimate.textContent = `${n} failure(s) at ${r}/min: about ${formatDuration(n / r)}${n / r > 720 ? ' (over the 12 h limit: raise the rate)' : ''}`;
    };
    rate.oninput = updateEstimate;
    updateEstimate();
    const batchInfo = el('p', null, { id: 'inc-batch' });
    replay.append(el('label', 'Replay at '), rate, el('span', ' requests/min '), el('button', 'Replay', { type: 'submit' }), ' ', estimate);
    replay.onsubmit = async (e) => {
      e.preventDefault();
      try {
        const b = (await api('POST', `/incidents/${id}/replay`, { requests_per_minute: Number(rate.value) })).data;
        await showIncident(id);
        document.getElementById('inc-batch').textContent = `Batch ${b.replay_batch_id}: ${b.queued_count} queued at ${b.requests_per_minute}/min.`;
      } catch (err) {
        fail(err);
      }
    };

    const note = el('form', null, { id: 'inc-note' });
    const noteText = el('input', null, { id: 'inc-note-text', placeholder: 'Add a note', maxlength: '10000', required: '' });
    note.append(noteText, el('button', 'Add note', { type: 'submit' }));
    note.onsubmit = (e) => {
      e.preventDefault();
      api('POST', `/incidents/${id}/updates`, { body: noteText.value }).then(() => showIncident(id)).catch(fail);
    };

    const timeline = el('ul', null, { id: 'inc-timeline' });
    for (const u of inc.updates) timeline.append(el('li', `${new Date(u.created_at).toLocaleString()} · ${u.is_system ? 'system' : `member ${u.author_id}`}: ${u.body}`));

    const failures = el('table', null, { id: 'inc-failures' });
    const fh = el('tr');
    for (const h of ['Failed', 'Request', 'Status', 'Error', 'Replayed', 'Replay status']) fh.append(el('th', h));
    failures.append(fh);
    for (const f of inc.failures) {
      const tr = el('tr');
      for (const c of [new Date(f.failed_at).toLocaleString(), f.request_id, f.status_code ?? '', f.error ?? '', f.replayed_at ? new Date(f.replayed_at).toLocaleString() : '', f.replay_status_code ?? '']) tr.append(el('td', c));
      failures.append(tr);
    }

    detail.replaceChildren(summary, actions, replay, batchInfo, error, el('h3', 'Timeline'), note, timeline, el('h3', 'Failures (newest 100)'), failures);
  }

  return { show };
}
