// Apps page of the cloud scheduler: every registered app (where its code
// comes from, what each item of it gets) and whether it is enabled.
// Admins enable, disable and delete an app (after a confirm).
import { html, t, toast, confirmDialog, usePoll, ErrorBox } from '../../ui.js';
import { get, post, del, enc, isAdmin } from '../../api.js';
import { Updated, run } from '../parts.js';
import { Enabled, Toggle, withDisabled } from './parts.js';

async function appOp(op, name, refresh) {
  if (!await confirmDialog(t('cloud.apps.confirm.' + op, { name }), { danger: op === 'delete' })) return;
  const path = `/api/app/${enc(name)}`;
  await run(() => (op === 'delete' ? del(path) : post(`${path}/${op}`)), t('cloud.apps.done.' + op, { name }), refresh, toast);
}

function Apps() {
  const poll = usePoll(async (o) => withDisabled(await get('/api/app/list', o), (a) => `/api/app/${enc(a.appName)}/disable`, o), 5000);
  const admin = isAdmin();
  const rows = poll.data || [];
  return html`<section>
    <div class="toolbar"><h1 class="grow">${t('cloud.apps.title')}</h1><${Updated} poll=${poll} /></div>
    <${ErrorBox} error=${poll.data ? null : poll.error} />
    <div class="table-wrap panel"><table class="plain" id="cloud-apps">
      <thead><tr><th>${t('cloud.apps.name')}</th><th>${t('cloud.apps.source')}</th><th>${t('cloud.apps.bootstrap')}</th>
        <th>${t('cloud.cpu')}</th><th>${t('cloud.memory')}</th><th>${t('cloud.state')}</th>${admin && html`<th></th>`}</tr></thead>
      <tbody>${rows.map((a) => html`<tr data-app=${a.appName} data-disabled=${String(a.disabled)}>
        <td>${a.appName}</td>
        <td class="mono">${a.image ? html`<span class="muted">${t('cloud.apps.image')}</span> ${a.image}` : a.appURL}</td>
        <td class="mono">${a.bootstrapScript || t('ui.never')}</td>
        <td>${a.cpuCount}</td><td>${a.memoryMB}</td>
        <td><${Enabled} disabled=${a.disabled} /></td>
        ${admin && html`<td class="row-actions">
          <${Toggle} disabled=${a.disabled} op=${(op) => appOp(op, a.appName, poll.refresh)} />
          <button class="small danger op-delete" onClick=${() => appOp('delete', a.appName, poll.refresh)}>${t('cloud.apps.delete')}</button>
        </td>`}
      </tr>`)}</tbody></table>
      ${poll.data && rows.length === 0 && html`<p class="muted">${t('cloud.apps.none')}</p>`}</div>
  </section>`;
}

export const routes = [
  // The shell's start page (/ and /overview) is the apps page.
  { path: '/overview', redirect: '/apps' },
  { path: '/apps', view: Apps, nav: 'nav.apps', title: 'cloud.apps.title', order: 10 },
];
