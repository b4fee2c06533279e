// Cloud jobs page: every job registered on the cloud scheduler with its
// app, cron, sharding, execution type, what each item gets and its state
// (disabled when the job or its app is). Admins trigger a TRANSIENT job,
// enable or disable a job and deregister it (after a confirm).
import { html, t, toast, confirmDialog, usePoll, ErrorBox } from '../../ui.js';
import { get, post, del, enc, isAdmin } from '../../api.js';
import { Updated, run } from '../parts.js';
import { Enabled, Toggle, withDisabled } from './parts.js';

async function jobOp(op, name, refresh) {
  if (!await confirmDialog(t('cloud.jobs.confirm.' + op, { name }), { danger: op === 'deregister' })) return;
  const call = {
    trigger: () => post('/api/job/trigger', name),
    enable: () => post(`/api/job/${enc(name)}/enable`),
    disable: () => post(`/api/job/${enc(name)}/disable`),
    deregister: () => del(`/api/job/${enc(name)}/deregister`),
  }[op];
  await run(call, t('cloud.jobs.done.' + op, { name }), refresh, toast);
}

function Jobs() {
  const poll = usePoll(async (o) => withDisabled(await get('/api/job/jobs', o), (j) => `/api/job/${enc(j.jobName)}/disable`, o), 5000);
  const admin = isAdmin();
  const rows = poll.data || [];
  return html`<section>
    <div class="toolbar"><h1 class="grow">${t('cloud.jobs.title')}</h1><${Updated} poll=${poll} /></div>
    <${ErrorBox} error=${poll.data ? null : poll.error} />
    <div class="table-wrap panel"><table class="plain" id="cloud-jobs">
      <thead><tr><th>${t('cloud.jobs.name')}</th><th>${t('cloud.jobs.app')}</th><th>${t('cloud.jobs.cron')}</th>
        <th>${t('cloud.jobs.sharding')}</th><th>${t('cloud.jobs.type')}</th><th>${t('cloud.jobs.cpu')}</th><th>${t('cloud.jobs.memory')}</th>
        <th>${t('cloud.state')}</th>${admin && html`<th></th>`}</tr></thead>
      <tbody>${rows.map((j) => html`<tr data-job=${j.jobName} data-disabled=${String(j.disabled)}>
        <td title=${j.description || ''}>${j.jobName}</td>
        <td><a href="/apps">${j.appName}</a></td>
        <td class="mono">${j.cron || t('ui.never')}</td>
        <td>${j.shardingTotalCount}</td>
        <td><span class="badge">${j.jobExecutionType}</span></td>
        <td>${j.cpuCount}</td><td>${j.memoryMB}</td>
        <td><${Enabled} disabled=${j.disabled} /></td>
        ${admin && html`<td class="row-actions">
          ${j.jobExecutionType === 'TRANSIENT' && !j.disabled &&
            html`<button class="small primary op-trigger" onClick=${() => jobOp('trigger', j.jobName, poll.refresh)}>${t('cloud.jobs.trigger')}</button>`}
          <${Toggle} disabled=${j.disabled} op=${(op) => jobOp(op, j.jobName, poll.refresh)} />
          <button class="small danger op-deregister" onClick=${() => jobOp('deregister', j.jobName, poll.refresh)}>${t('cloud.jobs.deregister')}</button>
        </td>`}
      </tr>`)}</tbody></table>
      ${poll.data && rows.length === 0 && html`<p class="muted">${t('cloud.jobs.none')}</p>`}</div>
  </section>`;
}

export const routes = [
  { path: '/jobs', view: Jobs, nav: 'nav.cloudJobs', title: 'cloud.jobs.title', order: 20 },
];
