// The login page: plain DOM, no framework (it must work before anything
// else loads). Posts JSON to /login; the server sets the session cookie.
import { t } from './i18n/t.js';

const $ = (id) => document.getElementById(id);
const next = new URLSearchParams(location.search).get('next') || '/';

document.title = t('login.pageTitle');
$('l-user').textContent = t('login.user');
$('l-password').textContent = t('login.password');
$('login-submit').textContent = t('login.submit');
$('next').value = next;

$('login-form').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const err = $('login-error');
  err.hidden = true;
  $('login-submit').disabled = true;
  try {
    const res = await fetch('/login', {
      method: 'POST',
      credentials: 'same-origin',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
      body: JSON.stringify({ username: $('username').value, password: $('password').value, next }),
    });
    const body = await res.json().catch(() => ({}));
    if (res.ok && body.success) {
      location.assign(body.model.next || '/');
      return;
    }
    err.textContent = res.status === 401 ? t('login.wrong') : (body.errorMsg || t('login.failed', { status: res.status }));
  } catch (e) {
    err.textContent = t('login.unreachable', { error: String(e) });
  }
  err.hidden = false;
  $('login-submit').disabled = false;
  $('password').select();
});

// Single sign-on: the button when the server has ejob.http.oidc, and why
// the last attempt failed (?sso=<reason>, a fixed word from the server).
(async () => {
  const reason = new URLSearchParams(location.search).get('sso');
  if (reason) {
    const key = 'sso.reason.' + reason;
    const msg = t(key);
    $('login-error').textContent = msg === key ? t('sso.reason.other', { reason }) : msg;
    $('login-error').hidden = false;
  }
  try {
    const res = await fetch('/console/sso', { credentials: 'same-origin', headers: { Accept: 'application/json' } });
    const body = await res.json();
    if (!body.success || !body.model.enabled) return;
    const a = document.createElement('a');
    a.id = 'sso-login';
    a.className = 'button sso-button';
    a.href = '/login/sso';
    a.textContent = t('sso.button');
    const or = document.createElement('p');
    or.className = 'login-or';
    or.textContent = t('sso.or');
    $('login-extra').replaceChildren(or, a);
  } catch (e) {
    // No button: password login still works.
  }
})();
