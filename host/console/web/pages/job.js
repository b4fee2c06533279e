// Job detail page: the sharding map (item -> instance -> status, with
// parameters and failover), the instances (IP, PID), recent executions
// and a chart of run durations and failures over time.
import { useEffect, useRef, useState } from 'preact/hooks';
import { html, t, fmtTime, fmtDuration, toast, confirmDialog, usePoll, StatusBadge, ErrorBox } from '../ui.js';
import { get, post, enc, isAdmin, ApiError } from '../api.js';
import { addCss, pidOf, durationMs, Result, Cause, Updated, run, OutputButton, OutputDialog, LiveOutputDialog } from './parts.js';

addCss('/assets/vendor/uplot-1.6.32/dist/uPlot.min.css');

// Chart ranges: label key and length in ms.
const RANGES = [['detail.range1h', 3600e3], ['detail.range24h', 86400e3], ['detail.range7d', 7 * 86400e3]];

function Items({ job, items, refresh }) {
  const admin = isAdmin();
  const [live, setLive] = useState(null);
  const toggle = async (it, op) => {
    if (!await confirmDialog(t(op === 'disable' ? 'detail.confirmDisableItem' : 'detail.confirmEnableItem', { item: it.item, job }))) return;
    await run(() => post(`/api/jobs/${enc(job)}/sharding/${it.item}/${op}`),
      t(op === 'disable' ? 'detail.itemDisabled' : 'detail.itemEnabled', { item: it.item }), refresh, toast);
  };
  return html`<div class="table-wrap"><table class="plain" id="items">
    <thead><tr><th>${t('detail.item')}</th><th>${t('detail.parameter')}</th><th>${t('detail.instance')}</th>
      <th>${t('detail.ip')}</th><th>${t('detail.pid')}</th><th>${t('detail.status')}</th><th>${t('detail.failover')}</th>
      ${admin && html`<th></th>`}</tr></thead>
    <tbody>${items.map((it) => html`<tr id=${'item-' + it.item} data-status=${it.status}>
      <td class="num">${it.item}</td>
      <td class="mono">${it.parameter || html`<span class="muted">${t('ui.never')}</span>`}</td>
      <td class="mono">${it.instanceId || html`<span class="muted">${t('detail.noOwner')}</span>`}</td>
      <td class="mono">${it.serverIp}</td>
      <td class="mono">${pidOf(it.instanceId)}</td>
      <td><${StatusBadge} status=${it.status} />${it.status === 'RUNNING' && html` <a href="#" class="item-live small"
        onClick=${(e) => { e.preventDefault(); setLive(it.item); }}>${t('output.live')}</a>`}</td>
      <td>${it.failover ? html`<span class="badge badge-failover" title=${t('detail.failoverBy', { id: it.failoverInstanceId })}>
            ${t('detail.failoverBy', { id: it.failoverInstanceId || '?' })}</span>`
        : it.failoverPending ? html`<span class="badge badge-failover">${t('detail.failoverPending')}</span>`
        : html`<span class="muted">${t('ui.never')}</span>`}</td>
      ${admin && html`<td class="row-actions">${it.status === 'DISABLED'
        ? html`<button class="small item-enable" data-item=${it.item} onClick=${() => toggle(it, 'enable')}>${t('detail.enable')}</button>`
        : html`<button class="small item-disable" data-item=${it.item} onClick=${() => toggle(it, 'disable')}>${t('detail.disable')}</button>`}</td>`}
    </tr>`)}</tbody></table></div>
    ${live !== null && html`<${LiveOutputDialog} job=${job} item=${live} onClose=${() => setLive(null)} />`}`;
}

function Instances({ instances }) {
  if (instances.length === 0) return html`<p class="muted" id="instances">${t('detail.noInstances')}</p>`;
  return html`<div class="table-wrap"><table class="plain" id="instances">
    <thead><tr><th>${t('detail.instance')}</th><th>${t('detail.ip')}</th><th>${t('detail.pid')}</th><th>${t('detail.server')}</th>
      <th>${t('detail.items')}</th><th>${t('detail.failoverItems')}</th></tr></thead>
    <tbody>${instances.map((i) => html`<tr>
      <td class="mono">${i.instanceId} ${i.leader && html`<span class="badge badge-ok">${t('detail.leader')}</span>`}</td>
      <td class="mono">${i.serverIp}</td><td class="mono">${i.pid}</td>
      <td>${i.serverStatus && html`<span class=${i.serverStatus === 'DISABLED' ? 'badge badge-disabled' : 'badge badge-ok'}>
        ${t(i.serverStatus === 'DISABLED' ? 'detail.serverDisabled' : 'detail.serverEnabled')}</span>`}</td>
      <td class="mono">${i.items.join(', ') || t('ui.never')}</td>
      <td class="mono">${i.failoverItems.join(', ') || t('ui.never')}</td>
    </tr>`)}</tbody></table></div>`;
}

// Chart plots each finished execution's duration at its start time:
// successes and failures as two series of points.
function Chart({ rows }) {
  const el = useRef(null);
  const plot = useRef(null);
  useEffect(() => {
    let gone = false;
    const done = rows.filter((r) => r.completeTime).slice().reverse();
    const xs = done.map((r) => new Date(r.startTime).getTime() / 1000);
    const secs = (r) => durationMs(r) / 1000;
    const data = [xs, done.map((r) => (r.success ? secs(r) : null)), done.map((r) => (r.success ? null : secs(r)))];
    import('uplot').then(({ default: UPlot }) => {
      if (gone || !el.current) return;
      const width = Math.max(280, el.current.clientWidth);
      if (plot.current) {
        plot.current.setData(data);
        return;
      }
      const point = (color) => ({ show: true, size: 7, fill: color, stroke: color });
      plot.current = new UPlot({
        width, height: 220,
        scales: { x: { time: true }, y: { range: (u, min, max) => [0, Math.max(1, max * 1.1)] } },
        axes: [{}, { label: t('detail.seconds') }],
        series: [{}, { label: t('detail.succeeded'), stroke: '#2e7d32', width: 0, points: point('#2e7d32'), paths: () => null },
          { label: t('detail.failed'), stroke: '#c62828', width: 0, points: point('#c62828'), paths: () => null }],
      }, data, el.current);
    });
    return () => { gone = true; };
  }, [rows]);
  useEffect(() => {
    const onResize = () => plot.current && el.current && plot.current.setSize({ width: Math.max(280, el.current.clientWidth), height: 220 });
    window.addEventListener('resize', onResize);
    return () => {
      window.removeEventListener('resize', onResize);
      if (plot.current) plot.current.destroy();
      plot.current = null;
    };
  }, []);
  return html`<div class="chart" id="duration-chart" ref=${el}></div>`;
}

function History({ job }) {
  const [range, setRange] = useState(RANGES[1][1]);
  const poll = usePoll((o) => get(`/console/api/jobs/${enc(job)}/executions?limit=1000&since=${Date.now() - range}`, o), 5000, [job, range]);
  const notConfigured = poll.error instanceof ApiError && poll.error.status === 404;
  const rows = (poll.data && poll.data.rows) || [];
  const finished = rows.filter((r) => r.completeTime);
  const failures = finished.filter((r) => !r.success).length;
  const [shown, setShown] = useState(null);
  return html`<section class="panel" id="executions">
    <div class="toolbar"><h2 class="grow">${t('detail.executions')}</h2>
      <select aria-label=${t('detail.range')} value=${range} onChange=${(e) => setRange(Number(e.target.value))}>
        ${RANGES.map(([k, ms]) => html`<option value=${ms}>${t(k)}</option>`)}</select></div>
    ${notConfigured ? html`<p class="muted">${t('detail.noTracing')}</p>` : html`
      <${ErrorBox} error=${poll.data ? null : poll.error} />
      <p class="muted">${t('detail.summary', { runs: finished.length, failures, more: poll.data && poll.data.more ? '+' : '' })}</p>
      <${Chart} rows=${rows} />
      <div class="table-wrap"><table class="plain" id="recent">
        <thead><tr><th>${t('history.start')}</th><th>${t('detail.item')}</th><th>${t('detail.ip')}</th>
          <th>${t('history.duration')}</th><th>${t('history.result')}</th><th>${t('history.cause')}</th><th>${t('output.output')}</th></tr></thead>
        <tbody>${rows.slice(0, 20).map((r) => html`<tr data-success=${String(r.success)} data-id=${r.id}>
          <td>${fmtTime(r.startTime)}</td><td class="num">${r.shardingItem}</td><td class="mono">${r.ip}</td>
          <td>${r.completeTime ? fmtDuration(durationMs(r)) : ''}</td><td><${Result} row=${r} /></td>
          <td><${Cause} text=${r.failureCause} /></td>
          <td><${OutputButton} row=${r} open=${setShown} hasOutput=${Boolean(r.output || r.failureCause)} /></td></tr>`)}</tbody></table></div>
      ${rows.length > 20 && html`<p><a href=${'/history?job=' + enc(job)}>${t('detail.allHistory')}</a></p>`}`}
    ${shown && html`<${OutputDialog} id=${shown} onClose=${() => setShown(null)} />`}
  </section>`;
}

function JobDetail({ params }) {
  const job = params.name;
  const poll = usePoll((o) => get(`/console/api/jobs/${enc(job)}`, o), 5000, [job]);
  const d = poll.data;
  return html`<section class="job-detail">
    <div class="toolbar"><h1 class="grow">${t('detail.title', { job })}</h1><${Updated} poll=${poll} /></div>
    <${ErrorBox} error=${d ? null : poll.error} />
    ${d && html`
      ${d.configError && html`<p class="error" id="config-error" role="alert">${t('detail.configError', { error: d.configError })}</p>`}
      <div class="panel facts">
        <span><${StatusBadge} status=${d.status} /></span>
        <span>${t('detail.cron')}: <code>${d.cron || t('detail.oneOff')}</code></span>
        <span>${t('detail.itemsCount', { n: d.shardingTotalCount })}</span>
        <span>${t('detail.instancesCount', { n: d.instanceCount })}</span>
        <span>${t('detail.leader')}: <code>${d.leader || t('ui.never')}</code></span>
        ${d.jobParameter && html`<span>${t('detail.jobParameter')}: <code>${d.jobParameter}</code></span>`}
        ${d.description && html`<span class="muted">${d.description}</span>`}
      </div>
      <section class="panel"><h2>${t('detail.sharding')}</h2><${Items} job=${job} items=${d.items} refresh=${poll.refresh} /></section>
      <section class="panel"><h2>${t('detail.instances')}</h2><${Instances} instances=${d.instances} /></section>`}
    <${History} job=${job} />
  </section>`;
}

export const routes = [{ path: '/jobs/:name', view: JobDetail, title: 'detail.pageTitle' }];
