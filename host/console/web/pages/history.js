// History page: the recorded executions and status traces (the host's
// elasticjob.tracing) with upstream's filters (job, IP, result, time
// range), paging, and each failure's cause expandable. The filters live
// in the URL (a link shows the same page) and survive every refresh.
import { useState } from 'preact/hooks';
import { html, t, fmtTime, fmtDuration, usePoll, StatusBadge, ErrorBox } from '../ui.js';
import { get, post, ApiError } from '../api.js';
import { durationMs, Result, Cause, Updated, OutputButton, OutputDialog } from './parts.js';

const PAGE_SIZES = [10, 20, 50, 100];
const FIELDS = ['tab', 'job', 'ip', 'result', 'from', 'to', 'size', 'page'];

// readFilters takes the filters from the URL's query.
function readFilters(query) {
  const f = { tab: 'executions', job: '', ip: '', result: '', from: '', to: '', size: '20', page: '1' };
  for (const k of FIELDS) if (query && query.get(k)) f[k] = query.get(k);
  return f;
}

// writeFilters puts the filters in the URL without a navigation.
function writeFilters(f) {
  const q = new URLSearchParams();
  for (const k of FIELDS) {
    const dflt = { tab: 'executions', size: '20', page: '1' }[k] || '';
    if (f[k] && f[k] !== dflt) q.set(k, f[k]);
  }
  const s = q.toString();
  history.replaceState(null, '', location.pathname + (s ? '?' + s : ''));
}

// ms reads a datetime-local value (the user's zone) as epoch ms.
const ms = (v) => (v ? new Date(v).getTime() : undefined);

function query(f, opts) {
  const body = { jobName: f.job || undefined, startTime: ms(f.from), endTime: ms(f.to), pageSize: Number(f.size), pageNumber: Number(f.page) };
  if (f.tab === 'status') return post('/api/event-trace/status', body, opts);
  body.ip = f.ip || undefined;
  if (f.result) body.isSuccess = f.result === 'success';
  return post('/api/event-trace/execution', body, opts);
}

// Executions lists upstream's rows (POST /api/event-trace/execution, which
// says nothing of output): each row's button opens the run's output.
function Executions({ rows }) {
  const [shown, setShown] = useState(null);
  return html`<table class="plain" id="history-rows">
    <thead><tr><th>${t('history.start')}</th><th>${t('history.job')}</th><th>${t('detail.item')}</th><th>${t('history.ip')}</th>
      <th>${t('history.source')}</th><th>${t('history.duration')}</th><th>${t('history.result')}</th><th>${t('history.cause')}</th>
      <th>${t('output.output')}</th></tr></thead>
    <tbody>${rows.map((r) => html`<tr data-success=${String(r.success)} data-job=${r.jobName} data-id=${r.id}>
      <td>${fmtTime(r.startTime)}</td><td><a href=${'/jobs/' + encodeURIComponent(r.jobName)}>${r.jobName}</a></td>
      <td class="num">${r.shardingItem}</td><td class="mono">${r.ip}</td><td>${r.source}</td>
      <td>${r.completeTime ? fmtDuration(durationMs(r)) : ''}</td><td><${Result} row=${r} /></td>
      <td><${Cause} text=${r.failureCause} /></td><td><${OutputButton} row=${r} open=${setShown} /></td></tr>`)}</tbody></table>
    ${shown && html`<${OutputDialog} id=${shown} onClose=${() => setShown(null)} />`}`;
}

function Statuses({ rows }) {
  return html`<table class="plain" id="history-rows">
    <thead><tr><th>${t('history.created')}</th><th>${t('history.job')}</th><th>${t('history.items')}</th><th>${t('history.ip')}</th>
      <th>${t('history.state')}</th><th>${t('history.message')}</th><th>${t('history.task')}</th></tr></thead>
    <tbody>${rows.map((r) => html`<tr data-state=${r.state}>
      <td>${fmtTime(r.creationTime)}</td><td>${r.jobName}</td><td class="mono nowrap">${r.shardingItems}</td><td class="mono">${r.slaveId}</td>
      <td><${StatusBadge} status=${r.state} /></td><td><${Cause} text=${r.message} /></td><td class="mono small">${r.taskId}</td></tr>`)}</tbody></table>`;
}

function History({ query: q }) {
  const [f, setF] = useState(() => readFilters(q));
  const [draft, setDraft] = useState(f);
  const apply = (next) => {
    setF(next);
    setDraft(next);
    writeFilters(next);
  };
  const poll = usePoll((o) => query(f, o), 5000, [JSON.stringify(f)]);
  const jobs = usePoll((o) => get('/api/jobs/getAllJobsBriefInfo', o), 60000);
  const notConfigured = poll.error instanceof ApiError && poll.error.status === 404;
  const page = poll.data || { total: 0, rows: [] };
  const pages = Math.max(1, Math.ceil(page.total / Number(f.size)));
  const n = Number(f.page);
  const set = (k) => (e) => setDraft({ ...draft, [k]: e.target.value });
  const submit = (e) => {
    e.preventDefault();
    apply({ ...draft, page: '1' });
  };
  return html`<section>
    <div class="toolbar"><h1 class="grow">${t('history.title')}</h1><${Updated} poll=${poll} /></div>
    <div class="tabs" role="tablist">
      ${['executions', 'status'].map((tab) => html`<button role="tab" id=${'tab-' + tab} aria-selected=${f.tab === tab}
        class=${f.tab === tab ? 'tab active' : 'tab'} onClick=${() => apply({ ...f, tab, page: '1' })}>${t('history.tab.' + tab)}</button>`)}
    </div>
    <form class="panel filters" id="history-filters" onSubmit=${submit}>
      <label>${t('history.job')} <input name="job" list="history-jobs" value=${draft.job} onInput=${set('job')} /></label>
      <datalist id="history-jobs">${(jobs.data || []).map((j) => html`<option value=${j.jobName} />`)}</datalist>
      ${f.tab === 'executions' && html`
        <label>${t('history.ip')} <input name="ip" value=${draft.ip} onInput=${set('ip')} /></label>
        <label>${t('history.result')} <select name="result" value=${draft.result} onChange=${set('result')}>
          <option value="">${t('history.any')}</option><option value="success">${t('history.success')}</option>
          <option value="failure">${t('history.failure')}</option></select></label>`}
      <label>${t('history.from')} <input type="datetime-local" name="from" value=${draft.from} onInput=${set('from')} /></label>
      <label>${t('history.to')} <input type="datetime-local" name="to" value=${draft.to} onInput=${set('to')} /></label>
      <button class="primary" id="history-search">${t('history.search')}</button>
      <button type="button" id="history-reset" onClick=${() => apply(readFilters(null))}>${t('history.reset')}</button>
    </form>
    ${notConfigured ? html`<p class="muted">${t('detail.noTracing')}</p>` : html`
      <${ErrorBox} error=${poll.data ? null : poll.error} />
      <div class="table-wrap panel">${f.tab === 'status' ? html`<${Statuses} rows=${page.rows} />` : html`<${Executions} rows=${page.rows} />`}
        ${poll.data && page.rows.length === 0 && html`<p class="muted">${t('history.none')}</p>`}</div>
      <div class="toolbar pager">
        <span class="grow muted" id="history-total">${t('history.total', { total: page.total, page: n, pages })}</span>
        <label>${t('history.pageSize')} <select id="history-size" value=${f.size} onChange=${(e) => apply({ ...f, size: e.target.value, page: '1' })}>
          ${PAGE_SIZES.map((s) => html`<option value=${String(s)}>${s}</option>`)}</select></label>
        <button id="history-prev" disabled=${n <= 1} onClick=${() => apply({ ...f, page: String(n - 1) })}>${t('history.prev')}</button>
        <button id="history-next" disabled=${n >= pages} onClick=${() => apply({ ...f, page: String(n + 1) })}>${t('history.next')}</button>
      </div>`}
  </section>`;
}

export const routes = [{ path: '/history', view: History, nav: 'nav.history', title: 'history.title', order: 40 }];
