// The agents panel: the organization's agents with their connection status,
// and enrollment, which shows the connect command (with its token) once.
// Like the rest of the dashboard, every API text goes through textContent.

/** @param {{ api: Function, el: Function, $: Function }} ui */
export function initAgents({ api, el, $ }) {
  let timer = null;

  function statusText(a) {
    if (a.status === 'connected') return `connected${a.hostname ? ' from ' + a.hostname : ''}${a.agent_version ? ' (v' + a.agent_version + ')' : ''}`;
    return a.last_seen_at ? `disconnected, last seen ${new Date(a.last_seen_at).toLocaleString()}` : 'never connected';
  }

  async function load() {
    const ul = $('agents');
    try {
      const agents = (await api('GET', '/agents?limit=100')).data.data;
      ul.replaceChildren();
      if (agents.length === 0) ul.append(el('li', 'No agents yet.', { class: 'muted' }));
      for (const a of agents) {
        const li = el('li', null, { class: 'agent' });
        li.append(el('span', '●', { class: a.status === 'connected' ? 'ok' : 'muted', title: a.status }), ' ');
        li.append(el('strong', a.name), ' ', el('small', a.environment, { class: 'muted' }));
        li.append(el('div', statusText(a), { class: 'muted small' }));
        ul.append(li);
      }
    } catch (err) {
      ul.replaceChildren(el('li', err.message, { class: 'error' }));
    }
  }

  $('new-agent').onsubmit = async (e) => {
    e.preventDefault();
    $('agent-error').textContent = '';
    try {
      const a = (await api('POST', '/agents', { name: $('agent-name').value.trim(), environment: $('agent-env').value })).data;
      $('agent-name').value = '';
      $('agent-command').textContent = a.command;
      $('agent-enrolled').hidden = false;
      await load();
    } catch (err) {
      $('agent-error').textContent = err.message;
    }
  };
  $('agent-copy').onclick = () => navigator.clipboard?.writeText($('agent-command').textContent);

  return {
    async start() {
      await load();
      clearInterval(timer);
      timer = setInterval(() => load().catch(() => {}), 5000);
    },
  };
}
