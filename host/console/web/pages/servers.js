// Servers page: every server IP of the namespace with its instances, jobs
// and disabled jobs; a server's page lists its jobs. Admins enable (a
// server with a disabled job) or disable (one without), shut down and
// remove (after a confirm) and read a job's dump.
import { useState } from 'preact/hooks';
import { html, t, toast, confirmDialog, usePoll, StatusBadge, ErrorBox } from '../ui.js';
import { get, post, del, enc, isAdmin } from '../api.js';
import { pidOf, Updated, run, useModal } from './parts.js';

// DefaultDumpPort is upstream's console default.
const DefaultDumpPort = 9888;

// serverOp runs op (disable, enable, shutdown, remove) on a server, or on
// one job of it, after a confirm.
async function serverOp(op, ip, job, refresh) {
  const where = job ? t('servers.jobOnServer', { job, ip }) : ip;
  if (!await confirmDialog(t('servers.confirm.' + op, { what: where }), { danger: op === 'shutdown' || op === 'remove' })) return;
  const path = job ? `/api/servers/${enc(ip)}/jobs/${enc(job)}` : `/api/servers/${enc(ip)}`;
  await run(() => (op === 'remove' ? del(path) : post(`${path}/${op}`)), t('servers.done.' + op, { what: where }), refresh, toast);
}

function Servers() {
  const poll = usePoll((o) => get('/api/servers/getAllServersBriefInfo', o), 5000);
  const [filter, setFilter] = useState('');
  const admin = isAdmin();
  const rows = (poll.data || []).filter((s) => !filter || s.serverIp.includes(filter) || s.jobNames.some((j) => j.includes(filter)));
  return html`<section>
    <div class="toolbar"><h1 class="grow">${t('servers.title')}</h1><${Updated} poll=${poll} />
      <input type="search" id="server-filter" placeholder=${t('servers.filter')} aria-label=${t('servers.filter')}
        value=${filter} onInput=${(e) => setFilter(e.target.value)} /></div>
    <${ErrorBox} error=${poll.data ? null : poll.error} />
    <div class="table-wrap panel"><table class="plain" id="servers">
      <thead><tr><th>${t('servers.ip')}</th><th>${t('servers.instances')}</th><th>${t('servers.jobs')}</th>
        <th>${t('servers.disabledJobs')}</th>${admin && html`<th></th>`}</tr></thead>
      <tbody>${rows.map((s) => html`<tr data-ip=${s.serverIp}>
        <td class="mono"><a href=${'/servers/' + enc(s.serverIp)}>${s.serverIp}</a></td>
        <td>${s.instancesNum}${s.instances.length > 0 && html` <span class="muted mono">(${t('servers.pids')} ${s.instances.map(pidOf).join(', ')})</span>`}</td>
        <td>${s.jobsNum}</td>
        <td>${s.disabledJobsNum > 0 ? html`<span class="badge badge-disabled">${s.disabledJobsNum}</span>` : 0}</td>
        ${admin && html`<td class="row-actions">
          ${s.disabledJobsNum > 0
            ? html`<button class="small op-enable" title=${t('servers.enableHint', { n: s.disabledJobsNum })}
                onClick=${() => serverOp('enable', s.serverIp, '', poll.refresh)}>${t('servers.enable')}</button>`
            : html`<button class="small op-disable" onClick=${() => serverOp('disable', s.serverIp, '', poll.refresh)}>${t('servers.disable')}</button>`}
          ${s.instancesNum > 0
            ? html`<button class="small danger op-shutdown" onClick=${() => serverOp('shutdown', s.serverIp, '', poll.refresh)}>${t('servers.shutdown')}</button>`
            : html`<button class="small danger op-remove" onClick=${() => serverOp('remove', s.serverIp, '', poll.refresh)}>${t('servers.remove')}</button>`}
        </td>`}
      </tr>`)}</tbody></table>
      ${poll.data && rows.length === 0 && html`<p class="muted">${t('servers.none')}</p>`}</div>
  </section>`;
}

// DumpDialog asks a host's dump port for its view of a job and shows the
// text with a copy button.
function DumpDialog({ ip, job, onClose }) {
  const [port, setPort] = useState(DefaultDumpPort);
  const [text, setText] = useState(null);
  const [busy, setBusy] = useState(false);
  const ref = useModal(onClose);
  const fetchDump = async (e) => {
    e.preventDefault();
    setBusy(true);
    try {
      setText(await post(`/api/servers/${enc(ip)}/${Number(port)}/jobs/${enc(job)}/dump`));
    } catch (err) {
      setText(t('ui.error', { error: err.message }));
    }
    setBusy(false);
  };
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
      toast(t('ui.copied'));
    } catch {
      // Without the clipboard API (plain HTTP): select the text instead.
      const pre = document.getElementById('dump-text');
      getSelection().selectAllChildren(pre);
      toast(t('servers.dumpSelected'));
    }
  };
  return html`<dialog ref=${ref} class="dump" id="dump-dialog" aria-labelledby="dump-title">
    <h2 id="dump-title">${t('servers.dumpTitle', { job, ip })}</h2>
    <form class="toolbar" onSubmit=${fetchDump}>
      <label>${t('servers.dumpPort')} <input type="number" id="dump-port" min="1" max="65535" required value=${port}
        onInput=${(e) => setPort(e.target.value)} /></label>
      <button class="primary" id="dump-fetch" disabled=${busy}>${t('servers.dumpFetch')}</button>
    </form>
    ${text !== null && html`<pre id="dump-text" class="dump-text">${text}</pre>`}
    <div class="dialog-buttons">
      ${text !== null && html`<button id="dump-copy" onClick=${copy}>${t('ui.copy')}</button>`}
      <button id="dump-close" onClick=${onClose}>${t('ui.close')}</button></div>
  </dialog>`;
}

function Server({ params }) {
  const ip = params.ip;
  const poll = usePoll((o) => get(`/api/servers/${enc(ip)}/jobs`, o), 5000, [ip]);
  const [dump, setDump] = useState(null);
  const admin = isAdmin();
  const jobs = poll.data || [];
  return html`<section>
    <div class="toolbar"><h1 class="grow">${t('servers.serverTitle', { ip })}</h1><${Updated} poll=${poll} /></div>
    <p><a href="/servers">${t('servers.back')}</a></p>
    <${ErrorBox} error=${poll.data ? null : poll.error} />
    <div class="table-wrap panel"><table class="plain" id="server-jobs">
      <thead><tr><th>${t('servers.job')}</th><th>${t('servers.status')}</th><th>${t('servers.instances')}</th><th></th></tr></thead>
      <tbody>${jobs.map((j) => html`<tr data-job=${j.jobName} data-status=${j.status}>
        <td><a href=${'/jobs/' + enc(j.jobName)}>${j.jobName}</a></td>
        <td><${StatusBadge} status=${j.status} /></td>
        <td>${j.instanceCount}</td>
        <td class="row-actions">
          ${admin && (j.status === 'DISABLED'
            ? html`<button class="small op-enable" onClick=${() => serverOp('enable', ip, j.jobName, poll.refresh)}>${t('servers.enable')}</button>`
            : html`<button class="small op-disable" onClick=${() => serverOp('disable', ip, j.jobName, poll.refresh)}>${t('servers.disable')}</button>`)}
          ${admin && (j.instanceCount > 0
            ? html`<button class="small danger op-shutdown" onClick=${() => serverOp('shutdown', ip, j.jobName, poll.refresh)}>${t('servers.shutdown')}</button>`
            : html`<button class="small danger op-remove" onClick=${() => serverOp('remove', ip, j.jobName, poll.refresh)}>${t('servers.remove')}</button>`)}
          ${admin && html`<button class="small op-dump" onClick=${() => setDump(j.jobName)}>${t('servers.dump')}</button>`}
        </td></tr>`)}</tbody></table></div>
    ${dump && html`<${DumpDialog} ip=${ip} job=${dump} onClose=${() => setDump(null)} />`}
  </section>`;
}

export const routes = [
  { path: '/servers', view: Servers, nav: 'nav.servers', title: 'servers.title', order: 30 },
  { path: '/servers/:ip', view: Server, title: 'servers.title' },
];
