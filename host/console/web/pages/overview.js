// Overview page: what needs a human, jobs by status, instances, registry.
import { html, t } from '../ui.js';

function Overview() {
  return html`<section><h1>${t('overview.title')}</h1></section>`;
}

export const routes = [{ path: '/overview', view: Overview, nav: 'nav.overview', title: 'overview.title', order: 10 }];
