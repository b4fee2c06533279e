// The console's pages: one module per page, one line each. A page module
// exports `routes`: [{path: '/jobs/:name', view: Component, nav: 'nav.jobs'
// (a navigation entry, optional), order: 20 (its place in the navigation)}];
// a route {path, redirect: '/other'} replaces its path by another.
export const pageModules = [
  './overview.js',
  './jobs.js',
  './job.js',
  './servers.js',
  './history.js',
  './namespaces.js',
];
