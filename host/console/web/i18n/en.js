// Every user-visible string of the console, in English. Keys are grouped by
// page ("jobs.title"); {name} is replaced by t(key, {name}). A translation
// is a module with the same keys (e.g. zh-CN.js) registered in t.js.
export const en = {
  // App shell.
  'app.title': 'ejob console',
  'app.loading': 'Loading…',
  'app.notFound': 'No page at {path}.',
  'app.logout': 'Log out',
  'app.roleAdmin': 'admin',
  'app.roleGuest': 'read-only',
  'app.menu': 'Menu',
  'app.zone': 'Times in {zone}',
  'app.refreshError': 'Could not refresh: {error}',
  'app.sessionEnds': 'Session ends at {time}',
  'nav.overview': 'Overview',
  'nav.jobs': 'Jobs',

  // Shared UI.
  'ui.confirm': 'Confirm',
  'ui.cancel': 'Cancel',
  'ui.close': 'Close',
  'ui.save': 'Save',
  'ui.copy': 'Copy',
  'ui.copied': 'Copied',
  'ui.done': 'Done',
  'ui.error': 'Error: {error}',
  'ui.never': '—',
  'ui.masked': '(secret, masked)',
  'ui.yes': 'yes',
  'ui.no': 'no',
  'ui.updated': 'Updated {time}',

  // Login page.
  'login.pageTitle': 'ejob console · log in',
  'login.user': 'User',
  'login.password': 'Password',
  'login.submit': 'Log in',
  'login.wrong': 'Wrong user name or password.',
  'login.failed': 'Login failed (HTTP {status}).',
  'login.unreachable': 'The server cannot be reached: {error}',

  // Overview page.
  'overview.title': 'Overview',

  // Jobs page.
  'jobs.title': 'Jobs',

  // Single sign-on (login page).
  'sso.button': 'Sign in with SSO',
  'sso.or': 'or',
  'sso.reason.unavailable': 'Single sign-on is unavailable: the identity provider cannot be reached. Try again later, or log in with a password.',
  'sso.reason.state': 'The sign-in expired or was started in another browser. Please try again.',
  'sso.reason.denied': 'The identity provider did not sign you in.',
  'sso.reason.token': 'The identity provider\'s answer was refused (see the server log). Please try again.',
  'sso.reason.norole': 'Your account has no role in this console: ask an administrator to give you the read-only or the admin group.',
  'sso.reason.busy': 'Too many sign-ins in progress. Please try again in a minute.',
  'sso.reason.other': 'Single sign-on failed ({reason}).',
};
