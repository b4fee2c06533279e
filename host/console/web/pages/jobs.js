// Jobs page: every job of the namespace in one sortable, filterable table
// (Tabulator, virtual rendering: fast on 1,000 jobs), refreshed every 5 s
// without losing the sort, the filters or the scroll position. Admins get
// upstream's actions where they apply, and the edit form (job-edit.js).
import { useEffect, useRef, useState, useMemo, useCallback } from 'preact/hooks';
import { html, t, usePoll, fmtTime, fmtShort, fmtRelative, DataTable, confirmDialog, toast } from '../ui.js';
import { get, post, del, enc, isAdmin } from '../api.js';
import { EditDialog } from '../components/job-edit.js';

const REFRESH_MS = 5000;
// The states of ejob's console (lifecycle.State), in the filter's order.
const STATES = ['READY', 'RUNNING', 'NEVER_RUN', 'RESHARDING', 'DISABLED', 'CRASHED', 'CONFIG_ERROR'];

// el builds a DOM element (Tabulator formatters return nodes: text never
// goes through innerHTML).
function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'class') e.className = v;
    else e.setAttribute(k, v);
  }
  for (const c of children) if (c !== null && c !== undefined) e.append(c);
  return e;
}

const badge = (status) => el('span', { class: 'badge badge-' + status.toLowerCase().replace(/_/g, '-') }, t('status.' + status));

// The actions upstream's console offers, and when (spec §10.4), by the
// job's state: a job that has never run or waits for a resharding may be
// triggered too (the trigger reshards it first); a running one is not
// (its instances drop a trigger while they run it); a disabled or crashed
// one is not (the server refuses it: no instance would run it).
const runnable = (j) => j.state === 'READY' || j.state === 'NEVER_RUN' || j.state === 'RESHARDING';
const ACTIONS = [
  { op: 'trigger', when: runnable },
  { op: 'disable', when: (j) => runnable(j) || j.state === 'RUNNING' },
  { op: 'enable', when: (j) => j.state === 'DISABLED' },
  { op: 'shutdown', when: (j) => j.state !== 'CRASHED' },
  { op: 'remove', when: (j) => j.state === 'CRASHED', danger: true },
  { op: 'edit', when: () => true },
];

export function actionsFor(job) {
  return ACTIONS.filter((a) => a.when(job));
}

// The row's buttons sit in fixed slots, so that a state change while the
// user aims (a job going from ready to running and back every few seconds)
// moves none of them: a slot with no action that applies keeps its place
// with an invisible, inert stand-in.
const SLOTS = [['trigger'], ['disable', 'enable'], ['shutdown', 'remove'], ['edit']];

function actionButtons(job) {
  const ops = new Map(actionsFor(job).map((a) => [a.op, a]));
  return SLOTS.map((slot) => {
    const a = slot.map((op) => ops.get(op)).find(Boolean);
    if (!a) return el('button', { type: 'button', class: 'small slot-empty', disabled: true, tabindex: '-1', 'aria-hidden': 'true' }, t('jobs.' + slot[0]));
    return el('button', { type: 'button', class: 'small' + (a.danger ? ' danger' : ''), 'data-op': a.op, 'data-job': job.jobName }, t('jobs.' + a.op));
  });
}

async function runAction(op, job) {
  const confirmKey = { trigger: 'jobs.confirmTrigger', disable: 'jobs.confirmDisable', enable: 'jobs.confirmEnable',
    shutdown: 'jobs.confirmShutdown', remove: 'jobs.confirmRemove' }[op];
  const label = t('jobs.' + op);
  if (!(await confirmDialog(t(confirmKey, { job }), { confirm: label, danger: op === 'remove' || op === 'shutdown' }))) return false;
  try {
    if (op === 'remove') await del('/api/jobs/config/' + enc(job));
    else await post(`/api/jobs/${enc(job)}/${op}`);
    toast(t('jobs.done', { action: label, job }));
    return true;
  } catch (e) {
    toast(t('jobs.failed', { action: label, job, error: e.message }), 'error');
    return false;
  }
}

function lastRunCell(r, trace) {
  if (!trace) return el('span', { class: 'muted' }, t('jobs.noTrace'));
  if (!r) return el('span', { class: 'muted' }, t('jobs.noRun'));
  if (!r.completeTime) return el('span', { class: 'badge badge-running', title: fmtTime(r.startTime) }, t('jobs.lastRunning', { when: fmtRelative(r.startTime) }));
  const ok = r.success;
  const e = el('span', { class: 'badge ' + (ok ? 'badge-success' : 'badge-failure'), title: fmtTime(r.completeTime) + (r.failureCause ? '\n' + r.failureCause : '') },
    t(ok ? 'jobs.lastOk' : 'jobs.lastFailed', { when: fmtRelative(r.completeTime) }));
  return e;
}

const timeOf = (v) => (v ? new Date(v).getTime() : Number.POSITIVE_INFINITY);

function columns(admin, traceRef) {
  const cols = [
    { title: t('jobs.colName'), field: 'jobName', sorter: 'string', minWidth: 140, responsive: 0,
      formatter: (c) => el('a', { href: '/jobs/' + enc(c.getValue()), class: 'job-link' }, c.getValue()) },
    // The fixed widths fit their badges and headers (sort arrow included).
    { title: t('jobs.colStatus'), field: 'state', width: 125, responsive: 0,
      formatter: (c) => {
        const b = badge(c.getValue());
        const why = c.getData().configError;
        if (why) b.title = t('jobs.configError', { error: why });
        return b;
      } },
    { title: t('jobs.colCron'), field: 'cron', minWidth: 120, responsive: 2,
      formatter: (c) => {
        const j = c.getData();
        if (!j.cron) return el('span', { class: 'muted' }, t('jobs.oneOff'));
        return el('span', { class: 'mono', title: j.cronError ? t('jobs.badCron', { error: j.cronError }) : (j.timeZone || '') },
          j.cron, j.cronError ? el('span', { class: 'badge badge-failure' }, '!') : null);
      } },
    { title: t('jobs.colNext'), field: 'nextFireTime', minWidth: 150, responsive: 1,
      sorter: (a, b) => timeOf(a) - timeOf(b),
      formatter: (c) => (c.getValue() ? el('span', { title: `${fmtTime(c.getValue())} (${fmtRelative(c.getValue())})` }, fmtShort(c.getValue()))
        : el('span', { class: 'muted' }, t('ui.never'))) },
    { title: t('jobs.colItems'), field: 'shardingTotalCount', sorter: 'number', hozAlign: 'right', width: 80, responsive: 3 },
    { title: t('jobs.colInstances'), field: 'instanceCount', sorter: 'number', hozAlign: 'right', width: 115, responsive: 2 },
    { title: t('jobs.colLast'), field: 'lastRun', minWidth: 200, responsive: 1,
      sorter: (a, b) => (a ? timeOf(a.startTime) : 0) - (b ? timeOf(b.startTime) : 0),
      formatter: (c) => lastRunCell(c.getValue(), traceRef.current) },
  ];
  if (admin) {
    // On a phone the buttons stack in a narrow column rather than push the
    // table past the screen's edge.
    const narrow = window.matchMedia('(max-width: 760px)').matches;
    cols.push({ title: t('jobs.colActions'), field: 'jobName', headerSort: false, minWidth: narrow ? 110 : 310, responsive: 0,
      cssClass: 'actions-cell',
      formatter: (c) => el('div', { class: 'row-actions' }, ...actionButtons(c.getData())) });
  }
  return cols;
}

// matches is the toolbar's filter.
function matches(j, q, status) {
  if (status && j.state !== status) return false;
  if (!q) return true;
  const s = q.toLowerCase();
  return j.jobName.toLowerCase().includes(s) || (j.cron || '').toLowerCase().includes(s) || (j.description || '').toLowerCase().includes(s);
}

function Jobs({ query }) {
  const admin = isAdmin();
  const [q, setQ] = useState(query.get('q') || '');
  const [status, setStatus] = useState(query.get('status') || '');
  const [shown, setShown] = useState(null);
  const [editing, setEditing] = useState(null);
  const table = useRef(null);
  const traceRef = useRef(true);
  const { data, error, refresh, updatedAt } = usePoll((o) => get('/console/api/jobs', o), REFRESH_MS);
  if (data) traceRef.current = data.trace;
  const rows = data ? data.jobs : null;

  // The filters live in the URL too: a reload or a shared link keeps them.
  useEffect(() => {
    const p = new URLSearchParams();
    if (q) p.set('q', q);
    if (status) p.set('status', status);
    const qs = p.toString();
    history.replaceState(null, '', location.pathname + (qs ? '?' + qs : ''));
    if (table.current) table.current.setFilter((row) => matches(row, q, status));
  }, [q, status]);

  const onTable = useCallback((tab) => {
    table.current = tab;
    tab.on('dataFiltered', (_f, rs) => setShown(rs.length));
    tab.setFilter((row) => matches(row, q, status));
    setShown(tab.getDataCount('active'));
  }, []);

  const onClick = useCallback(async (ev) => {
    const b = ev.target.closest && ev.target.closest('button[data-op]');
    if (!b) return;
    const { op, job } = b.dataset;
    if (op === 'edit') {
      setEditing(job);
      return;
    }
    if (await runAction(op, job)) refresh();
  }, [refresh]);

  const options = useMemo(() => ({
    index: 'jobName', columns: columns(admin, traceRef), initialSort: [{ column: 'jobName', dir: 'asc' }],
    renderVertical: 'virtual',
  }), []);

  const total = rows ? rows.length : 0;
  return html`<section id="jobs" onClick=${onClick}>
    <div class="toolbar">
      <h1 class="grow">${t('jobs.title')}</h1>
      <span class="muted" id="updated">${updatedAt ? t('ui.updated', { time: fmtTime(updatedAt) }) : ''}</span>
    </div>
    <div class="toolbar">
      <input id="jobs-search" type="search" placeholder=${t('jobs.search')} aria-label=${t('jobs.search')} value=${q}
        onInput=${(e) => setQ(e.target.value)} class="grow" />
      <select id="jobs-status" aria-label=${t('jobs.colStatus')} value=${status} onChange=${(e) => setStatus(e.target.value)}>
        <option value="">${t('jobs.allStatuses')}</option>
        ${STATES.map((s) => html`<option value=${s}>${t('status.' + s)}</option>`)}
      </select>
      <span class="muted" id="jobs-count">${rows ? t('jobs.count', { shown: shown ?? total, total }) : t('app.loading')}</span>
    </div>
    ${error ? html`<p class="error">${t('app.refreshError', { error: error.message })}</p>` : null}
    <${DataTable} id="jobs-table" options=${options} rows=${rows} onTable=${onTable} />
    ${editing ? html`<${EditDialog} job=${editing} onClose=${() => setEditing(null)} onSaved=${() => { setEditing(null); refresh(); }} />` : null}
  </section>`;
}

export const routes = [{ path: '/jobs', view: Jobs, nav: 'nav.jobs', title: 'jobs.title', order: 20 }];
