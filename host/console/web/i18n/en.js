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
};
