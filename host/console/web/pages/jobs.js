// Jobs page: every job of the namespace in one sortable, filterable table.
import { html, t } from '../ui.js';

function Jobs() {
  return html`<section><h1>${t('jobs.title')}</h1></section>`;
}

export const routes = [{ path: '/jobs', view: Jobs, nav: 'nav.jobs', title: 'jobs.title', order: 20 }];
