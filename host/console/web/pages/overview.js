// Overview page: what needs a human first, then jobs by state, servers,
// the registry session, and the failures and late jobs of the last 24 h
// (from the event trace, when the server has one). Refreshes every 5 s.
import { html, t, usePoll, fmtTime, fmtRelative, ErrorBox, useNow } from '../ui.js';
import { get } from '../api.js';

const REFRESH_MS = 5000;

const jobLink = (name) => html`<a href=${'/jobs/' + encodeURIComponent(name)}>${name}</a>`;

function list(names, max = 8) {
  const shown = names.slice(0, max).map((n, i) => html`${i ? ', ' : ''}${jobLink(n)}`);
  return names.length > max ? html`${shown} … (+${names.length - max})` : shown;
}

// attention lists what a human should look at, worst first.
function attention(m) {
  const out = [];
  if (!m.registry.ready) out.push(html`<li class="bad" id="att-registry">${t('overview.registryDown', { reason: m.registry.notReady })}</li>`);
  if (m.crashed.length) out.push(html`<li class="bad" id="att-crashed">${t('overview.crashed', { n: m.crashed.length, jobs: '' })}${list(m.crashed)}</li>`);
  if (m.failures.length) out.push(html`<li class="bad" id="att-failures"><a href="#failures">${t('overview.failedJobs', { n: m.failures.length })}</a></li>`);
  if (m.late.length) out.push(html`<li class="warn" id="att-late"><a href="#late">${t('overview.lateJobs', { n: m.late.length })}</a></li>`);
  for (const b of m.configErrors || []) out.push(html`<li class="bad">${jobLink(b.jobName)}: ${t('overview.configError', { problem: b.problem })}</li>`);
  for (const b of m.badCron) out.push(html`<li class="bad">${t('overview.badCron', { job: b.jobName, problem: b.problem })}</li>`);
  if (m.traceError) out.push(html`<li class="warn">${t('overview.traceError', { error: m.traceError })}</li>`);
  return out;
}

function Card({ id, num, label, kind = '' }) {
  return html`<div class=${'card ' + kind} id=${id}><div class="num">${num}</div><div class="label">${label}</div></div>`;
}

function Failures({ m, now }) {
  if (!m.trace) return html`<p class="muted" id="no-trace">${t('overview.noTrace')}</p>`;
  if (m.failures.length === 0) return html`<p class="muted">${t('overview.noFailures')}</p>`;
  return html`<div class="table-scroll"><table class="simple" id="failures-table">
    <thead><tr><th>${t('overview.colJob')}</th><th>${t('overview.colCount')}</th><th>${t('overview.colLast')}</th>
      <th>${t('overview.colItems')}</th><th>${t('overview.colIPs')}</th><th>${t('overview.colCause')}</th></tr></thead>
    <tbody>${m.failures.map((f) => html`<tr>
      <td>${jobLink(f.jobName)}</td><td class="num">${f.count}</td>
      <td title=${fmtTime(f.last.completeTime || f.last.startTime)}>${fmtRelative(f.last.completeTime || f.last.startTime, now)}</td>
      <td>${f.items.join(', ')}</td><td>${f.ips.join(', ')}</td>
      <td><details><summary>${(f.last.failureCause || '').split('\n')[0].slice(0, 80) || t('ui.never')}</summary><pre class="cause">${f.last.failureCause}</pre></details></td>
    </tr>`)}</tbody></table></div>`;
}

function Late({ m, now }) {
  if (!m.trace) return html`<p class="muted">${t('overview.noTrace')}</p>`;
  if (m.late.length === 0) return html`<p class="muted">${t('overview.noLate')}</p>`;
  return html`<div class="table-scroll"><table class="simple" id="late-table">
    <thead><tr><th>${t('overview.colJob')}</th><th>${t('overview.colExpected')}</th><th>${t('overview.colLastStart')}</th></tr></thead>
    <tbody>${m.late.map((l) => html`<tr><td>${jobLink(l.jobName)}</td>
      <td title=${fmtTime(l.expected)}>${fmtTime(l.expected)} (${fmtRelative(l.expected, now)})</td>
      <td>${l.lastStart ? fmtTime(l.lastStart) : t('ui.never')}</td></tr>`)}</tbody></table>
    ${m.lateUnchecked > 0 ? html`<p class="muted">${t('overview.lateUnchecked', { n: m.lateUnchecked })}</p>` : null}</div>`;
}

function Overview() {
  const { data: m, error, updatedAt } = usePoll((o) => get('/console/api/overview', o), REFRESH_MS);
  const now = useNow(10e3);
  if (!m) return html`<section><h1>${t('overview.title')}</h1><${ErrorBox} error=${error} />${error ? null : html`<p class="muted">${t('app.loading')}</p>`}</section>`;
  const items = attention(m);
  return html`<section id="overview">
    <div class="toolbar"><h1 class="grow">${t('overview.title')}</h1>
      <span class="muted" id="updated">${updatedAt ? t('ui.updated', { time: fmtTime(updatedAt) }) : ''}</span></div>
    ${error ? html`<p class="error">${t('app.refreshError', { error: error.message })}</p>` : null}
    <div class=${'panel attention' + (items.length ? '' : ' calm')} id="attention">
      <h2>${t('overview.attention')}</h2>
      ${items.length ? html`<ul>${items}</ul>` : html`<p id="all-good">${t('overview.allGood')}</p>`}
    </div>
    <div class="cards">
      <${Card} id="card-total" num=${m.jobs.total} label=${t('overview.jobs')} />
      <${Card} id="card-ready" num=${m.jobs.ready} label=${t('overview.ready')} kind="ok" />
      <${Card} id="card-running" num=${m.jobs.running} label=${t('overview.running')} kind="ok" />
      <${Card} id="card-never-run" num=${m.jobs.neverRun} label=${t('overview.neverRun')} />
      <${Card} id="card-resharding" num=${m.jobs.resharding} label=${t('overview.reshardingCard')} kind=${m.jobs.resharding ? 'warn' : ''} />
      <${Card} id="card-disabled" num=${m.jobs.disabled} label=${t('overview.disabled')} kind="off" />
      <${Card} id="card-crashed" num=${m.jobs.crashed} label=${t('overview.crashedCard')} kind=${m.jobs.crashed ? 'bad' : ''} />
      <${Card} id="card-config-error" num=${m.jobs.configError} label=${t('overview.configErrorCard')} kind=${m.jobs.configError ? 'bad' : ''} />
      <${Card} id="card-servers" num=${m.servers} label=${t('overview.servers')} />
      <${Card} id="card-instances" num=${m.instances} label=${t('overview.instances')} />
      <${Card} id="card-registry" num=${m.registry.ready ? t('overview.registryOk') : t('overview.registryNotReady')}
        label=${`${t('overview.registry')} ${m.registry.zkAddressList}/${m.registry.namespace}`} kind=${m.registry.ready ? 'ok small' : 'bad small'} />
    </div>
    <div class="grid2">
      <div class="panel" id="failures"><h2>${t('overview.failures')}</h2><${Failures} m=${m} now=${now} /></div>
      <div class="panel" id="late"><h2>${t('overview.late')}</h2><${Late} m=${m} now=${now} /></div>
    </div>
  </section>`;
}

export const routes = [{ path: '/overview', view: Overview, nav: 'nav.overview', title: 'overview.title', order: 10 }];
