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
