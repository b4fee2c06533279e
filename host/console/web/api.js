// api.js: the console's only way to the server. It sends the session
// cookie, adds the CSRF header to every write, unwraps the REST API's
// envelope ({success, errorCode, errorMsg, model}) and sends the browser to
// the login page when the session is gone. An error's status is the
// envelope's errorCode: /api/* answers errors with HTTP 200, as
// ElasticJob-UI's backend does, /console/api/* with the same status in
// both.

let current = null; // the session: {username, role, csrfToken, expiresAt}
let leaving = false; // toLogin ran: the page is going away

export class ApiError extends Error {
  constructor(status, message, body) {
    super(message);
    this.status = status;
    this.body = body;
  }
}

export function toLogin() {
  // Several refreshes may fail at once: one navigation, not one each (a
  // second would restart the first and reload the login page under the
  // user's typing).
  if (leaving) return;
  leaving = true;
  const next = location.pathname + location.search + location.hash;
  location.assign('/login?next=' + encodeURIComponent(next));
}

// loadSession reads GET /console/session, or goes to the login page.
export async function loadSession() {
  const res = await fetch('/console/session', { credentials: 'same-origin', headers: { Accept: 'application/json' } });
  if (res.status === 401) {
    toLogin();
    return new Promise(() => {}); // the page is going away
  }
  const body = await res.json();
  if (!body.success) throw new ApiError(res.status, body.errorMsg || 'session', body);
  current = body.model;
  return current;
}

export function session() {
  return current;
}

export function isAdmin() {
  return current !== null && current.role === 'admin';
}

// request sends method path with an optional JSON body and answers the
// envelope's model (or the bare JSON of the count endpoints). A failure is
// an ApiError with the server's message.
//
// background marks a request the page sends by itself (a periodic
// refresh): the server does not count it as use of the session, so a page
// left open still logs out after the idle timeout.
export async function request(method, path, body, { signal, background = false } = {}) {
  const headers = { Accept: 'application/json' };
  if (background) headers['X-Ejob-Background'] = '1';
  if (method !== 'GET' && method !== 'HEAD') {
    if (current) headers['X-CSRF-Token'] = current.csrfToken;
  }
  const init = { method, headers, credentials: 'same-origin', signal };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const res = await fetch(path, init);
  let data = null;
  const text = await res.text();
  if (text !== '') {
    try {
      data = JSON.parse(text);
    } catch {
      throw new ApiError(res.status, `HTTP ${res.status}: ${text.slice(0, 200)}`, text);
    }
  }
  const envelope = data !== null && typeof data === 'object' && 'success' in data && 'errorCode' in data;
  const msg = envelope ? data.errorMsg : null;
  const status = envelope && !data.success && data.errorCode ? data.errorCode : res.status;
  if (res.status === 401 || (status === 403 && msg === 'Unauthorized.')) {
    toLogin();
    return new Promise(() => {});
  }
  if (!res.ok || (envelope && !data.success)) {
    throw new ApiError(status, msg || `HTTP ${status}`, data);
  }
  return envelope ? data.model : data;
}

export const get = (path, opts) => request('GET', path, undefined, opts);
export const post = (path, body, opts) => request('POST', path, body, opts);
export const put = (path, body, opts) => request('PUT', path, body, opts);
export const del = (path, opts) => request('DELETE', path, undefined, opts);

// enc escapes one path segment (job names may hold characters a URL reserves).
export const enc = encodeURIComponent;

export async function logout() {
  try {
    await post('/logout');
  } finally {
    location.assign('/login');
  }
}
