// The dashboard is a plain client of the /v1 API: everything it shows, a key
// can fetch with curl. No framework and no build step; all text from the API
// goes through textContent, never into markup.
import { initIncidents } from './incidents.js';
import { initAgents } from './agents.js';
import { initSubscriptions } from './subscriptions.js';
import { followRequests } from './tail.js';

const $ = (id) => document.getElementById(id);
const state = { key: localStorage.getItem('weir.key') || '', endpoint: null, oldest: null, tail: null, request: null };

async function api(method, path, body) {
  const res = await fetch('/v1' + path, {
    method,
    headers: { authorization: 'Bearer ' + state.key, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  if (res.status === 204) return null;
  const json = await res.json().catch(() => ({}));
  if (!res.ok) throw new Error(json.error?.message || 'HTTP ' + res.status);
  return json;
}

function el(tag, text, attrs = {}) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  return e;
}

function row(cells) {
  const tr = el('tr');
  for (const c of cells) tr.append(el('td', c));
  return tr;
}

async function signIn() {
  try {
    const me = (await api('GET', '/me')).data;
    $('who').textContent = `${me.member.email} (${me.member.role}) · ${me.organization.name} · plan ${me.organization.plan}`;
    $('signin').hidden = true;
    $('app').hidden = false;
    $('signout').hidden = false;
    $('nav').hidden = false;
    await loadEndpoints();
    await agents.start();
  } catch (err) {
    $('signin').hidden = false;
    $('app').hidden = true;
    $('signin-error').textContent = state.key ? err.message : '';
  }
}

async function loadEndpoints() {
  const list = (await api('GET', '/endpoints')).data;
  const ul = $('endpoints');
  ul.replaceChildren();
  for (const ep of list) {
    const li = el('li', ep.name + (ep.paused ? ' (paused)' : ''));
    if (state.endpoint?.id === ep.id) li.className = 'active';
    li.onclick = () => selectEndpoint(ep);
    ul.append(li);
  }
  if (state.endpoint) {
    const fresh = list.find((e) => e.id === state.endpoint.id);
    if (fresh) showEndpoint(fresh);
    else clearEndpoint();
  }
}

function clearEndpoint() {
  state.endpoint = null;
  state.tail?.stop();
  state.tail = null;
  $('endpoint').hidden = true;
  $('request').hidden = true;
  $('pick').hidden = false;
}

function showEndpoint(ep) {
  state.endpoint = ep;
  $('pick').hidden = true;
  $('endpoint').hidden = false;
  $('ep-name').textContent = ep.name;
  $('ep-url').textContent = ep.ingest_url;
  $('ep-forward').textContent = ep.forward_url || 'none';
  $('ep-state').textContent = ep.paused ? 'paused: ingestion answers 423' : 'active';
  $('pause').textContent = ep.paused ? 'Resume' : 'Pause';
}

async function selectEndpoint(ep) {
  showEndpoint(ep);
  $('request').hidden = true;
  for (const li of $('endpoints').children) li.className = li.textContent.startsWith(ep.name) ? 'active' : '';
  state.tail?.stop();
  await Promise.all([loadDestinations(), loadRequests()]);
  // new captures arrive over the live tail instead of a refresh every 2 s
  state.tail = followRequests({
    endpointId: ep.id,
    // resume after the newest row shown: nothing captured since the page was read is missed
    after: $('requests').firstElementChild?.dataset.id ?? null,
    key: state.key,
    onRequest: (r) => {
      if (state.endpoint?.id !== r.endpoint_id || document.querySelector(`#requests tr[data-id="${r.id}"]`)) return;
      $('requests').prepend(requestRow(r));
    },
    onState: (s) => ($('tail-state').textContent = s === 'live' ? 'live' : s === 'reconnecting' ? 'reconnecting…' : s),
  });
}

async function loadDestinations() {
  const ul = $('destinations');
  ul.replaceChildren();
  try {
    const items = (await api('GET', `/endpoints/${state.endpoint.id}/destinations`)).data.data;
    if (items.length === 0) ul.append(el('li', 'none', { class: 'muted' }));
    for (const d of items) {
      const target = d.destination_type === 'https' ? d.url : `agent ${d.agent_id} → 127.0.0.1:${d.target_port}${d.target_path}`;
      ul.append(el('li', `${d.name}: ${target}${d.enabled ? '' : ' (disabled)'}`));
    }
  } catch (err) {
    ul.append(el('li', err.message, { class: 'error' }));
  }
}

function formatSize(n) {
  return n < 1024 ? `${n} B` : n < 1048576 ? `${(n / 1024).toFixed(1)} KiB` : `${(n / 1048576).toFixed(1)} MiB`;
}

function appendRequests(page) {
  for (const r of page.data) $('requests').append(requestRow(r));
  state.oldest = page.meta.next_cursor;
  $('more').hidden = !page.meta.has_more;
}

function requestRow(r) {
  const tr = row([new Date(r.received_at).toLocaleString(), r.method, (r.path || '/') + (r.query ? '?' + r.query : ''), r.content_type || '', formatSize(r.body_size)]);
  tr.dataset.id = r.id;
  tr.onclick = () => showRequest(r.id);
  return tr;
}

// The newest page once; the live tail prepends what arrives after it and "Older" appends the page before the oldest row shown.
async function loadRequests() {
  if (!state.endpoint) return;
  const page = (await api('GET', `/endpoints/${state.endpoint.id}/requests?limit=50`)).data;
  $('requests').replaceChildren();
  appendRequests(page);
}

async function loadOlder() {
  if (!state.oldest) return;
  appendRequests((await api('GET', `/endpoints/${state.endpoint.id}/requests?limit=50&before=${state.oldest}`)).data);
}

async function showRequest(id) {
  state.request = id;
  const r = (await api('GET', `/requests/${id}`)).data;
  $('request').hidden = false;
  $('rq-id').textContent = r.id;
  const headers = $('rq-headers');
  headers.replaceChildren();
  for (const h of r.headers) headers.append(row([h.name, h.value]));
  $('rq-body').textContent = r.body_encoding === 'utf8' ? r.body : `(binary, ${r.body_size} bytes, base64)\n${r.body}`;
  $('rq-raw').removeAttribute('href');
  $('rq-raw').onclick = (e) => {
    e.preventDefault();
    downloadBody(id);
  };
  await loadForwards(id);
}

async function downloadBody(id) {
  const res = await fetch(`/v1/requests/${id}/body`, { headers: { authorization: 'Bearer ' + state.key } });
  const url = URL.createObjectURL(await res.blob());
  window.open(url, '_blank');
}

async function loadForwards(id) {
  const box = $('rq-forwards');
  box.replaceChildren();
  try {
    const forwards = (await api('GET', `/requests/${id}/forwards`)).data.data;
    if (forwards.length === 0) box.append(el('p', 'No forwards: the endpoint has no forward URL or destinations.', { class: 'muted' }));
    for (const f of forwards) {
      box.append(el('p', `${f.destination_name || 'forward_url'} → ${f.url || 'agent'}: ${f.status} after ${f.attempt_count} attempt(s)`, { class: f.status === 'succeeded' ? 'ok' : f.status === 'pending' || f.status === 'in_flight' ? 'muted' : 'bad' }));
      const t = el('table');
      for (const a of f.attempts) t.append(row([new Date(a.started_at).toLocaleString(), a.status_code ?? a.error_class ?? '', `${a.duration_ms} ms`, a.error_message ?? '']));
      box.append(t);
    }
  } catch (err) {
    box.append(el('p', err.message, { class: 'error' }));
  }
}

$('signin-form').onsubmit = (e) => {
  e.preventDefault();
  state.key = $('key').value.trim();
  localStorage.setItem('weir.key', state.key);
  signIn();
};
$('signout').onclick = () => {
  localStorage.removeItem('weir.key');
  location.reload();
};
$('new-endpoint').onsubmit = async (e) => {
  e.preventDefault();
  $('endpoint-error').textContent = '';
  try {
    const forward = $('new-forward').value.trim();
    const ep = (await api('POST', '/endpoints', { name: $('new-name').value.trim(), ...(forward ? { forward_url: forward } : {}) })).data;
    $('new-name').value = '';
    $('new-forward').value = '';
    await loadEndpoints();
    await selectEndpoint(ep);
  } catch (err) {
    $('endpoint-error').textContent = err.message;
  }
};
$('pause').onclick = async () => {
  await api('PATCH', `/endpoints/${state.endpoint.id}`, { paused: !state.endpoint.paused });
  await loadEndpoints();
};
$('delete').onclick = async () => {
  if (!confirm(`Delete ${state.endpoint.name} and every request captured on it?`)) return;
  await api('DELETE', `/endpoints/${state.endpoint.id}`);
  clearEndpoint();
  await loadEndpoints();
};
$('copy').onclick = () => navigator.clipboard?.writeText($('ep-url').textContent);
$('more').onclick = () => loadOlder();
$('replay').onclick = async () => {
  await api('POST', `/requests/${state.request}/replay`);
  setTimeout(() => loadForwards(state.request), 1000);
};
initIncidents({ api, el });
initSubscriptions({ api, el });
const agents = initAgents({ api, el, $ });
signIn();
