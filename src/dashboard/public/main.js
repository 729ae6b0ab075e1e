// The dashboard's shell: sign-in, the layout (skip link, header, navigation,
// main), and the route table. Each page is an ES module under pages/, loaded
// when first opened.
import { api, session, ApiError } from './lib/api.js';
import { html, render, useEffect, useState } from './lib/html.js';
import { matchPath, navigate, useLocation } from './lib/router.js';
import { MeContext } from './lib/session.js';
import { ErrorNote, Loading } from './lib/ui.js';
import { SignIn } from './pages/signin.js';

/**
 * Every page: URL pattern, the module under pages/ and the component it
 * exports. The first match wins; `nav` entries appear in the navigation.
 */
const ROUTES = [
  { pattern: '/endpoints', module: 'endpoints.js', component: 'EndpointsPage', nav: 'Endpoints' },
  { pattern: '/endpoints/:id', module: 'endpoint.js', component: 'EndpointPage' },
  { pattern: '/endpoints/:id/*', module: 'endpoint.js', component: 'EndpointPage' },
  { pattern: '/destinations', module: 'destinations.js', component: 'DestinationsPage', nav: 'Destinations' },
  { pattern: '/destinations/:id', module: 'destinations.js', component: 'DestinationPage' },
  { pattern: '/incidents', module: 'incidents.js', component: 'IncidentsPage', nav: 'Incidents' },
  { pattern: '/incidents/:id', module: 'incidents.js', component: 'IncidentPage' },
  { pattern: '/agents', module: 'agents.js', component: 'AgentsPage', nav: 'Agents' },
  { pattern: '/subscriptions', module: 'subscriptions.js', component: 'SubscriptionsPage', nav: 'Subscriptions' },
  { pattern: '/usage', module: 'usage.js', component: 'UsagePage', nav: 'Usage' },
  { pattern: '/keys', module: 'keys.js', component: 'KeysPage', nav: 'API keys' },
  { pattern: '/members', module: 'members.js', component: 'MembersPage', nav: 'Members' },
];

function findRoute(path) {
  for (const route of ROUTES) {
    const params = matchPath(route.pattern, path);
    if (params) return { route, params };
  }
  return null;
}

const loaded = new Map();
function loadPage(route) {
  if (!loaded.has(route.module)) loaded.set(route.module, import('./pages/' + route.module));
  return loaded.get(route.module).then((mod) => mod[route.component]);
}

/** The page for the current URL, once its module has loaded. */
function Router({ path, query }) {
  const found = findRoute(path);
  const [Component, setComponent] = useState(null);
  const [error, setError] = useState(null);
  useEffect(() => {
    if (path === '/') return navigate('/endpoints', { replace: true });
    if (!found) return undefined;
    let current = true;
    setError(null);
    loadPage(found.route).then(
      (c) => current && setComponent(() => c),
      (e) => current && setError(e),
    );
    return () => (current = false);
  }, [found?.route]);
  if (path === '/') return null;
  if (!found) {
    return html`<div class="page"><h1 tabindex="-1">Page not found</h1><p>Nothing lives at <code>${path}</code>. <a href="/endpoints">Go to endpoints</a>.</p></div>`;
  }
  if (error) return html`<div class="page"><h1 tabindex="-1">This page did not load</h1><${ErrorNote} error=${error} /></div>`;
  if (!Component) return html`<${Loading} />`;
  return html`<${Component} params=${found.params} query=${query} path=${path} />`;
}

function Nav({ path }) {
  return html`<nav class="nav" aria-label="Main">
    <ul>
      ${ROUTES.filter((r) => r.nav).map((r) => {
        const active = path === r.pattern || path.startsWith(r.pattern + '/');
        return html`<li><a href=${r.pattern} aria-current=${active ? 'page' : undefined}>${r.nav}</a></li>`;
      })}
      <li><a href="/reference" target="_blank" rel="noopener">API reference</a></li>
    </ul>
  </nav>`;
}

function Shell({ me }) {
  const { path, query } = useLocation();
  return html`<${MeContext.Provider} value=${me}>
    <a class="skip" href="#main">Skip to content</a>
    <header class="top">
      <a class="brand" href="/endpoints">Weir</a>
      <span class="who">${me.member.email} (${me.api_key.effective_role}) · ${me.organization.name} · plan ${me.organization.plan}</span>
      <button type="button" class="signout" onClick=${() => session.signOut()}>Sign out</button>
    </header>
    <div class="layout">
      <${Nav} path=${path} />
      <main id="main" tabindex="-1"><${Router} path=${path} query=${query} /></main>
    </div>
  <//>`;
}

/** Signed out: the sign-in page; signed in: /v1/me, then the shell. */
function App() {
  const [s, setS] = useState({ key: session.key, reason: session.reason });
  const [me, setMe] = useState(null);
  const [error, setError] = useState(null);
  useEffect(() => session.subscribe((next) => setS({ ...next })), []);
  useEffect(() => {
    setMe(null);
    setError(null);
    if (!s.key) return;
    api.get('/me').then(
      (r) => setMe(r.data),
      (e) => e instanceof ApiError && e.status === 401 ? null : setError(e),
    );
  }, [s.key]);
  if (!s.key) return html`<${SignIn} reason=${s.reason} />`;
  if (error) {
    return html`<main class="page narrow" id="main"><h1>Weir</h1><${ErrorNote} error=${error} />
      <button type="button" onClick=${() => setS({ ...s })}>Try again</button>
      <button type="button" onClick=${() => session.signOut()}>Sign out</button></main>`;
  }
  if (!me) return html`<${Loading} label="Signing in…" />`;
  return html`<${Shell} me=${me} />`;
}

const root = document.getElementById('root');
root.replaceChildren(); // the "Loading…" line of index.html
render(html`<${App} />`, root);
