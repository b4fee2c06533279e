// Job detail page: the sharding map (item -> instance -> state and last
// result, with parameters and failover), the instances (IP, PID), recent executions
// and a chart of run durations and failures over time.
import { useEffect, useRef, useState } from 'preact/hooks';
import { html, t, fmtTime, fmtDuration, fmtRelative, toast, confirmDialog, usePoll, StatusBadge, ErrorBox } from '../ui.js';
import { get, post, enc, isAdmin, ApiError } from '../api.js';
import { addCss, pidOf, durationMs, Result, Cause, Updated, run, OutputButton, OutputDialog, LiveOutputDialog } from './parts.js';

addCss('/assets/vendor/uplot-1.6.32/dist/uPlot.min.css');

// Chart ranges: label key and length in ms.
const RANGES = [['detail.range1h', 3600e3], ['detail.range24h', 86400e3], ['detail.range7d', 7 * 86400e3]];

// LastResult shows an item's newest finished run: success or failure with
// its time (the cause as a tooltip).
function LastResult({ run }) {
  if (!run) return html`<span class="muted">${t('detail.noResult')}</span>`;
  const at = run.completeTime || run.startTime;
  const title = fmtTime(at) + (run.failureCause ? '\n' + run.failureCause : '');
  return run.success
    ? html`<span class="badge badge-success last-result" title=${title}>${t('detail.lastOk', { when: fmtRelative(at) })}</span>`
    : html`<span class="badge badge-failure last-result" title=${title}>${t('detail.lastFailed', { when: fmtRelative(at) })}</span>`;
}

function Items({ job, items, trace, lastResults, refresh }) {
  const admin = isAdmin();
  const [live, setLive] = useState(null);
  const toggle = async (it, op) => {
    if (!await confirmDialog(t(op === 'disable' ? 'detail.confirmDisableItem' : 'detail.confirmEnableItem', { item: it.item, job }))) return;
    await run(() => post(`/api/jobs/${enc(job)}/sharding/${it.item}/${op}`),
      t(op === 'disable' ? 'detail.itemDisabled' : 'detail.itemEnabled', { item: it.item }), refresh, toast);
  };
  return html`<div class="table-wrap"><table class="plain" id="items">
    <thead><tr><th>${t('detail.item')}</th><th>${t('detail.parameter')}</th><th>${t('detail.instance')}</th>
      <th>${t('detail.ip')}</th><th>${t('detail.pid')}</th><th>${t('detail.status')}</th>
      ${trace && html`<th>${t('detail.lastResult')}</th>`}<th>${t('detail.failover')}</th>
      ${admin && html`<th></th>`}</tr></thead>
    <tbody>${items.map((it) => html`<tr id=${'item-' + it.item} data-status=${it.status} data-state=${it.state}>
      <td class="num">${it.item}</td>
      <td class="mono">${it.parameter || html`<span class="muted">${t('ui.never')}</span>`}</td>
      <td class="mono">${it.instanceId || html`<span class="muted">${t('detail.noOwner')}</span>`}</td>
      <td class="mono">${it.serverIp}</td>
      <td class="mono">${pidOf(it.instanceId)}</td>
      <td><${StatusBadge} status=${it.state} />${it.state === 'RUNNING' && html` <a href="#" class="item-live small"
        onClick=${(e) => { e.preventDefault(); setLive(it.item); }}>${t('output.live')}</a>`}</td>
      ${trace && html`<td><${LastResult} run=${lastResults[it.item]} /></td>`}
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

// chartScale is the y unit that fits durations up to maxMs: milliseconds
// below 1 s, else seconds.
function chartScale(maxMs) {
  return maxMs < 1000 ? { unit: 'ms', ms: 1, label: t('detail.ms') } : { unit: 's', ms: 1000, label: t('detail.seconds') };
}

// Chart plots each finished execution's duration at its start time:
// successes and failures as two series of points. The y-axis fits the
// data (from 0 to a little above the longest run, in ms or s); the legend
// shows each series' run count and longest run, and the values under the
// cursor.
function Chart({ rows }) {
  const el = useRef(null);
  const plot = useRef(null);
  useEffect(() => {
    let gone = false;
    const done = rows.filter((r) => r.completeTime).slice().reverse();
    const maxMs = done.reduce((m, r) => Math.max(m, durationMs(r)), 0);
    const scale = chartScale(maxMs);
    const xs = done.map((r) => new Date(r.startTime).getTime() / 1000);
    const y = (r) => durationMs(r) / scale.ms;
    const data = [xs, done.map((r) => (r.success ? y(r) : null)), done.map((r) => (r.success ? null : y(r)))];
    const summary = (ok) => {
      const mine = done.filter((r) => r.success === ok);
      if (mine.length === 0) return t('detail.legendNone');
      return t('detail.legendSummary', { n: mine.length, max: fmtDuration(Math.max(...mine.map(durationMs))) });
    };
    import('uplot').then(({ default: UPlot }) => {
      if (gone || !el.current) return;
      // The longest run plotted, for the browser tests.
      el.current.dataset.longestMs = String(maxMs);
      const width = Math.max(280, el.current.clientWidth);
      if (plot.current && plot.current.ejobUnit === scale.unit) {
        plot.current.ejobSummary = summary;
        plot.current.setData(data);
        plot.current.setLegend();
        return;
      }
      if (plot.current) plot.current.destroy();
      const point = (color) => ({ show: true, size: 7, fill: color, stroke: color });
      // Under the cursor a series shows its value there (nothing for a
      // point of the other series); elsewhere its summary.
      const value = (ok) => (u, v, _s, idx) => (idx == null ? u.ejobSummary(ok) : v == null ? '' : fmtDuration(v * scale.ms));
      const box = el.current;
      const p = new UPlot({
        width, height: 220,
        // The drawn y range, in the chart's unit, for the browser tests.
        hooks: { setScale: [(u, key) => { if (key === 'y') box.dataset.yMax = String(u.scales.y.max); }] },
        scales: { x: { time: true }, y: { range: (u, min, max) => [0, max > 0 ? max * 1.15 : 1] } },
        axes: [{}, { label: scale.label, size: 60 }],
        series: [{ value: (u, v, _s, idx) => (idx == null ? t('detail.legendTime') : fmtTime(v * 1000)) },
          { label: t('detail.succeeded'), stroke: '#2e7d32', width: 0, points: point('#2e7d32'), paths: () => null, value: value(true) },
          { label: t('detail.failed'), stroke: '#c62828', width: 0, points: point('#c62828'), paths: () => null, value: value(false) }],
      }, data, el.current);
      p.ejobUnit = scale.unit;
      box.dataset.unit = scale.unit;
      p.ejobSummary = summary;
      p.setLegend({ idx: null });
      plot.current = p;
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
        <span id="job-state"><${StatusBadge} status=${d.state} /></span>
        <span>${t('detail.cron')}: <code>${d.cron || t('detail.oneOff')}</code></span>
        <span>${t('detail.itemsCount', { n: d.shardingTotalCount })}</span>
        <span>${t('detail.instancesCount', { n: d.instanceCount })}</span>
        <span>${t('detail.leader')}: <code>${d.leader || t('ui.never')}</code></span>
        ${d.jobParameter && html`<span>${t('detail.jobParameter')}: <code>${d.jobParameter}</code></span>`}
        ${d.description && html`<span class="muted">${d.description}</span>`}
      </div>
      <section class="panel"><h2>${t('detail.sharding')}</h2><${Items} job=${job} items=${d.items} trace=${d.trace} lastResults=${d.lastResults || {}} refresh=${poll.refresh} /></section>
      <section class="panel"><h2>${t('detail.instances')}</h2><${Instances} instances=${d.instances} /></section>`}
    <${History} job=${job} />
  </section>`;
}

export const routes = [{ path: '/jobs/:name', view: JobDetail, title: 'detail.pageTitle' }];
