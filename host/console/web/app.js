// app.js: the console's shell: session, navigation, router. Pages come
// from pages/index.js; each renders inside <main>.
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { html, t, zone } from './ui.js';
import { loadSession, session, logout } from './api.js';
import { pageModules } from './pages/index.js';

// compile turns '/jobs/:name' into a matcher of a path.
function compile(pattern) {
  const names = [];
  const re = new RegExp('^' + pattern.replace(/\/:(\w+)/g, (_, n) => {
    names.push(n);
    return '/([^/]+)';
  }) + '/?$');
  return (p) => {
    const m = re.exec(p);
    if (!m) return null;
    const params = {};
    names.forEach((n, i) => { params[n] = decodeURIComponent(m[i + 1]); });
    return params;
  };
}

// navigate shows path without reloading the page.
export function navigate(path, { replace = false } = {}) {
  if (replace) history.replaceState(null, '', path);
  else history.pushState(null, '', path);
  window.dispatchEvent(new Event('ejob:navigate'));
}

function useLocation() {
  const [loc, setLoc] = useState(location.pathname + location.search);
  useEffect(() => {
    const on = () => setLoc(location.pathname + location.search);
    window.addEventListener('popstate', on);
    window.addEventListener('ejob:navigate', on);
    return () => {
      window.removeEventListener('popstate', on);
      window.removeEventListener('ejob:navigate', on);
    };
  }, []);
  return loc;
}

// Links inside the app navigate without a reload.
document.addEventListener('click', (e) => {
  const a = e.target.closest && e.target.closest('a[href]');
  if (!a || a.target || a.hasAttribute('download') || e.defaultPrevented || e.button !== 0 ||
      e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  const url = new URL(a.href, location.href);
  if (url.origin !== location.origin || url.pathname.startsWith('/api/') || url.pathname.startsWith('/assets/') ||
      url.pathname === '/login') return;
  e.preventDefault();
  navigate(url.pathname + url.search);
});

function App({ routes }) {
  const loc = useLocation();
  const [menuOpen, setMenuOpen] = useState(false);
  const path = loc.split('?')[0];
  let match = null;
  for (const r of routes) {
    const params = r.match(path === '/' ? '/overview' : path);
    if (params) {
      match = { route: r, params };
      break;
    }
  }
  useEffect(() => {
    if (match && match.route.redirect) navigate(match.route.redirect, { replace: true });
  }, [loc]);
  useEffect(() => {
    setMenuOpen(false);
    document.title = match && match.route.title ? `${t(match.route.title)} · ${t('app.title')}` : t('app.title');
  }, [loc]);
  const s = session();
  const nav = routes.filter((r) => r.nav).sort((a, b) => (a.order ?? 100) - (b.order ?? 100));
  const active = (r) => path === r.path || path.startsWith(r.path + '/') || (path === '/' && r.path === '/overview');
  const View = match ? match.route.view : null;
  if (match && match.route.redirect) return null;
  return html`
    <header class="topbar">
      <a class="brand" href="/overview"><span class="brand-mark">e</span>job</a>
      <button class="menu-toggle" aria-expanded=${menuOpen} aria-controls="nav" onClick=${() => setMenuOpen(!menuOpen)}>${t('app.menu')}</button>
      <nav id="nav" class=${menuOpen ? 'open' : ''}>
        ${nav.map((r) => html`<a href=${r.path} class=${active(r) ? 'active' : ''} aria-current=${active(r) ? 'page' : null}>${t(r.nav)}</a>`)}
      </nav>
      <div class="user">
        <span class="user-name" title=${t('app.zone', { zone })}>${s.username}</span>
        <span class=${'role role-' + s.role}>${s.role === 'admin' ? t('app.roleAdmin') : t('app.roleGuest')}</span>
        <button id="logout" class="link" onClick=${logout}>${t('app.logout')}</button>
      </div>
    </header>
    <main id="main">
      ${View ? html`<${View} key=${path} params=${match.params} query=${new URLSearchParams(loc.split('?')[1] || '')} />`
             : html`<p class="error">${t('app.notFound', { path })}</p>`}
    </main>`;
}

async function main() {
  await loadSession();
  const mods = await Promise.all(pageModules.map((p) => import(new URL(p, new URL('./pages/', import.meta.url)).href)));
  const routes = mods.flatMap((m) => m.routes || []).map((r) => ({ ...r, match: compile(r.path) }));
  const root = document.getElementById('app');
  root.textContent = '';
  render(html`<${App} routes=${routes} />`, root);
}

main().catch((e) => {
  document.getElementById('app').textContent = t('ui.error', { error: e.message || String(e) });
  throw e;
});
