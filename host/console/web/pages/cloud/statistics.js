// Statistics page of the cloud scheduler (upstream's dashboard): the task
// results of today, the last hour and the last minute, the registered
// jobs by execution type, and charts of the task results per minute of
// the last 24 hours, of the running tasks and jobs of the last week and of
// the registered jobs over time. The charts and the period counts come
// from the statistics tables of the event-trace database: without
// elasticjob.tracing the page shows what the leader counts by itself and,
// in place of each missing part, the server's reason.
import { html, t, usePoll, ErrorBox, fmtTime } from '../../ui.js';
import { get } from '../../api.js';
import { Updated, addCss } from '../parts.js';
import { useEffect, useRef } from 'preact/hooks';

addCss('/assets/vendor/uplot-1.6.32/dist/uPlot.min.css');

const S = '/api/job/statistics';

// settle answers {data} or {error} for one path, so that one missing
// table leaves the rest of the page.
async function settle(path, o) {
  try {
    return { data: await get(path, o) };
  } catch (error) {
    return { error };
  }
}

async function load(o) {
  const paths = {
    online: `${S}/tasks/results/online`,
    lastHour: `${S}/tasks/results/lastHour`,
    lastMinute: `${S}/tasks/results/lastMinute`,
    types: `${S}/jobs/executionType`,
    results: `${S}/tasks/results?since=last24hours`,
    tasks: `${S}/tasks/running?since=lastWeek`,
    jobs: `${S}/jobs/running?since=lastWeek`,
    register: `${S}/jobs/register`,
  };
  const keys = Object.keys(paths);
  const got = await Promise.all(keys.map((k) => settle(paths[k], o)));
  return Object.fromEntries(keys.map((k, i) => [k, got[i]]));
}

function Card({ id, num, label, kind = '' }) {
  return html`<div class=${'card ' + kind} id=${id}><div class="num">${num}</div><div class="label">${label}</div></div>`;
}

// Missing says why a part of the page is not there (the server's message).
function Missing({ error }) {
  return html`<p class="muted missing">${t('cloud.stats.missing', { reason: error.message })}</p>`;
}

// Results are the cards of one task result period.
function Results({ id, r, label }) {
  if (r.error) {
    return html`<div class="card off small" id=${id}><div class="num">—</div><div class="label">${label}: ${r.error.message}</div></div>`;
  }
  const d = r.data;
  return html`<div class=${'card ' + (d.failedCount ? 'bad' : 'ok')} id=${id} data-success=${d.successCount} data-failed=${d.failedCount}>
    <div class="num">${d.successCount} / ${d.failedCount}</div>
    <div class="label">${label} (${t('cloud.stats.succeededFailed')})</div></div>`;
}

// Chart draws rows over time: one line per series, y read by its field.
function Chart({ id, rows, series }) {
  const el = useRef(null);
  const plot = useRef(null);
  useEffect(() => {
    let gone = false;
    const sorted = rows.filter((r) => r.statisticsTime).slice()
      .sort((a, b) => new Date(a.statisticsTime) - new Date(b.statisticsTime));
    const data = [sorted.map((r) => new Date(r.statisticsTime).getTime() / 1000), ...series.map((s) => sorted.map((r) => r[s.field]))];
    // What is drawn, for the browser tests: the rows and each series' sum.
    el.current.dataset.points = String(sorted.length);
    el.current.dataset.sums = JSON.stringify(Object.fromEntries(series.map((s) => [s.field, sorted.reduce((n, r) => n + (r[s.field] || 0), 0)])));
    import('uplot').then(({ default: UPlot }) => {
      if (gone || !el.current) return;
      if (plot.current) {
        plot.current.setData(data);
        return;
      }
      const width = Math.max(280, el.current.clientWidth);
      plot.current = new UPlot({
        width, height: 200,
        scales: { x: { time: true }, y: { range: (u, min, max) => [0, max > 0 ? max * 1.15 : 1] } },
        series: [{ value: (u, v) => (v == null ? '' : fmtTime(v * 1000)) },
          ...series.map((s) => ({ label: s.label, stroke: s.color, width: 2, points: { show: sorted.length < 2 } }))],
      }, data, el.current);
    });
    return () => { gone = true; };
  }, [rows]);
  useEffect(() => {
    const onResize = () => plot.current && el.current && plot.current.setSize({ width: Math.max(280, el.current.clientWidth), height: 200 });
    window.addEventListener('resize', onResize);
    return () => {
      window.removeEventListener('resize', onResize);
      if (plot.current) plot.current.destroy();
      plot.current = null;
    };
  }, []);
  return html`<div class="chart" id=${id} ref=${el}></div>`;
}

// Panel is one chart, or why it is missing, or that it has no rows yet.
function Panel({ id, title, r, series }) {
  let body;
  if (r.error) body = html`<${Missing} error=${r.error} />`;
  else if (r.data.length === 0) body = html`<p class="muted">${t('cloud.stats.noRows')}</p>`;
  else body = html`<${Chart} id=${id + '-chart'} rows=${r.data} series=${series} />`;
  return html`<div class="panel" id=${id}><h2>${title}</h2>${body}</div>`;
}

function Statistics() {
  const poll = usePoll(load, 10000);
  const d = poll.data;
  if (!d) {
    return html`<section><h1>${t('cloud.stats.title')}</h1><${ErrorBox} error=${poll.error} />${poll.error ? null : html`<p class="muted">${t('app.loading')}</p>`}</section>`;
  }
  const types = d.types.data || {};
  const ok = '#2e7d32';
  const bad = '#c62828';
  return html`<section id="cloud-statistics">
    <div class="toolbar"><h1 class="grow">${t('cloud.stats.title')}</h1><${Updated} poll=${poll} /></div>
    <h2>${t('cloud.stats.results')}</h2>
    <div class="cards">
      <${Results} id="stats-online" r=${d.online} label=${t('cloud.stats.online')} />
      <${Results} id="stats-last-hour" r=${d.lastHour} label=${t('cloud.stats.lastHour')} />
      <${Results} id="stats-last-minute" r=${d.lastMinute} label=${t('cloud.stats.lastMinute')} />
    </div>
    <h2>${t('cloud.stats.jobs')}</h2>
    ${d.types.error ? html`<${Missing} error=${d.types.error} />` : html`<div class="cards">
      <${Card} id="stats-jobs" num=${(types.transientJobCount || 0) + (types.daemonJobCount || 0)} label=${t('cloud.stats.registered')} />
      <${Card} id="stats-transient" num=${types.transientJobCount || 0} label=${t('cloud.stats.transient')} />
      <${Card} id="stats-daemon" num=${types.daemonJobCount || 0} label=${t('cloud.stats.daemon')} />
    </div>`}
    <div class="grid2">
      <${Panel} id="stats-results" title=${t('cloud.stats.resultsPerMinute')} r=${d.results}
        series=${[{ field: 'successCount', label: t('cloud.stats.succeeded'), color: ok }, { field: 'failedCount', label: t('cloud.stats.failed'), color: bad }]} />
      <${Panel} id="stats-running-tasks" title=${t('cloud.stats.runningTasks')} r=${d.tasks}
        series=${[{ field: 'runningCount', label: t('cloud.stats.running'), color: '#1565c0' }]} />
      <${Panel} id="stats-running-jobs" title=${t('cloud.stats.runningJobs')} r=${d.jobs}
        series=${[{ field: 'runningCount', label: t('cloud.stats.running'), color: '#1565c0' }]} />
      <${Panel} id="stats-register" title=${t('cloud.stats.registeredOverTime')} r=${d.register}
        series=${[{ field: 'registeredCount', label: t('cloud.stats.registered'), color: '#6a1b9a' }]} />
    </div>
  </section>`;
}

export const routes = [
  { path: '/statistics', view: Statistics, nav: 'nav.statistics', title: 'cloud.stats.title', order: 40 },
];
