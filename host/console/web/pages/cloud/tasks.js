// Tasks page of the cloud scheduler: the fires waiting in ready, the
// items running (where, since when, and the launcher's state and reason,
// e.g. a pod pending for lack of room) and the items queued for failover.
import { html, t, usePoll, ErrorBox, fmtTime, fmtRelative, useNow } from '../../ui.js';
import { get } from '../../api.js';
import { Updated } from '../parts.js';
import { Items } from './parts.js';

async function load(o) {
  const [running, ready, failover] = await Promise.all(['running', 'ready', 'failover'].map((k) => get('/api/job/tasks/' + k, o)));
  return { running, ready, failover };
}

function Tasks() {
  const poll = usePoll(load, 3000);
  const d = poll.data || { running: [], ready: [], failover: [] };
  const now = useNow();
  return html`<section>
    <div class="toolbar"><h1 class="grow">${t('cloud.tasks.title')}</h1><${Updated} poll=${poll} /></div>
    <${ErrorBox} error=${poll.data ? null : poll.error} />
    <h2>${t('cloud.tasks.running')}</h2>
    <div class="table-wrap panel"><table class="plain" id="tasks-running">
      <thead><tr><th>${t('cloud.tasks.job')}</th><th>${t('cloud.tasks.items')}</th><th>${t('cloud.tasks.where')}</th>
        <th>${t('cloud.state')}</th><th>${t('cloud.tasks.since')}</th><th>${t('cloud.tasks.taskId')}</th></tr></thead>
      <tbody>${d.running.map((r) => html`<tr data-job=${r.metaInfo.jobName} data-item=${r.metaInfo.shardingItems.join(',')}>
        <td><a href="/jobs">${r.metaInfo.jobName}</a></td>
        <td><${Items} items=${r.metaInfo.shardingItems} /></td>
        <td class="mono">${r.slaveId}</td>
        <td>${r.state ? html`<span class="badge">${r.state}</span>` : t('ui.never')}${r.reason && html` <span class="muted">${r.reason}</span>`}</td>
        <td class="since" title=${fmtTime(r.startTime)}>${r.startTime ? fmtRelative(r.startTime, now) : t('ui.never')}</td>
        <td class="mono small">${r.id}</td></tr>`)}</tbody></table>
      ${poll.data && d.running.length === 0 && html`<p class="muted">${t('cloud.tasks.noneRunning')}</p>`}</div>
    <h2>${t('cloud.tasks.ready')}</h2>
    <div class="table-wrap panel"><table class="plain" id="tasks-ready">
      <thead><tr><th>${t('cloud.tasks.job')}</th><th>${t('cloud.tasks.times')}</th></tr></thead>
      <tbody>${d.ready.map((r) => html`<tr data-job=${r.jobName}><td><a href="/jobs">${r.jobName}</a></td><td>${r.times}</td></tr>`)}</tbody></table>
      ${poll.data && d.ready.length === 0 && html`<p class="muted">${t('cloud.tasks.noneReady')}</p>`}</div>
    <h2>${t('cloud.tasks.failover')}</h2>
    <div class="table-wrap panel"><table class="plain" id="tasks-failover">
      <thead><tr><th>${t('cloud.tasks.job')}</th><th>${t('cloud.tasks.items')}</th><th>${t('cloud.tasks.original')}</th></tr></thead>
      <tbody>${d.failover.map((r) => html`<tr data-job=${r.taskInfo.jobName}>
        <td><a href="/jobs">${r.taskInfo.jobName}</a></td><td><${Items} items=${r.taskInfo.shardingItems} /></td>
        <td class="mono small">${r.originalTaskId}</td></tr>`)}</tbody></table>
      ${poll.data && d.failover.length === 0 && html`<p class="muted">${t('cloud.tasks.noneFailover')}</p>`}</div>
  </section>`;
}

export const routes = [
  { path: '/tasks', view: Tasks, nav: 'nav.tasks', title: 'cloud.tasks.title', order: 30 },
];
