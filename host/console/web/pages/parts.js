// parts.js: what the job detail, servers and history pages share (not a
// page: not listed in index.js).
import { useEffect, useRef, useState } from 'preact/hooks';
import { html, t, fmtTime } from '../ui.js';
import { get, enc } from '../api.js';

// addCss links a stylesheet once.
export function addCss(href) {
  if (document.querySelector(`link[rel="stylesheet"][href="${href}"]`)) return;
  const l = document.createElement('link');
  l.rel = 'stylesheet';
  l.href = href;
  document.head.append(l);
}

addCss('/assets/pages/parts.css');

// pidOf is the part of an instance id after "@-@" (a process id).
export function pidOf(id) {
  const i = String(id || '').indexOf('@-@');
  return i < 0 ? '' : id.slice(i + 3);
}

// durationMs is an execution's run time, or null while it runs.
export function durationMs(row) {
  if (!row.startTime || !row.completeTime) return null;
  return new Date(row.completeTime).getTime() - new Date(row.startTime).getTime();
}

// Result shows an execution's outcome: success, failure or running.
export function Result({ row }) {
  if (!row.completeTime) return html`<span class="badge badge-running">${t('history.running')}</span>`;
  return row.success
    ? html`<span class="badge badge-success">${t('history.success')}</span>`
    : html`<span class="badge badge-failure">${t('history.failure')}</span>`;
}

// Cause shows a failure cause: its first line, the rest expandable.
export function Cause({ text }) {
  if (!text) return html`<span class="muted">${t('ui.never')}</span>`;
  const first = text.split('\n')[0];
  return html`<details class="cause"><summary>${first.length > 120 ? first.slice(0, 120) + '…' : first}</summary><pre>${text}</pre></details>`;
}

// useModal opens the dialog of the returned ref as a modal and calls
// onClose when Escape cancels it; the caller closes it by unmounting.
export function useModal(onClose) {
  const ref = useRef(null);
  useEffect(() => {
    const d = ref.current;
    d.showModal();
    const onCancel = (e) => {
      e.preventDefault();
      onClose();
    };
    d.addEventListener('cancel', onCancel);
    return () => d.removeEventListener('cancel', onCancel);
  }, []);
  return ref;
}

// OutputButton opens an execution's output (OutputDialog) with open(id);
// hasOutput false (the list knows there is none) shows a dash instead.
export function OutputButton({ row, open, hasOutput = true }) {
  if (!hasOutput) return html`<span class="muted">—</span>`;
  return html`<button class="small op-output" title=${row.output ? row.output.tail : ''}
    onClick=${() => open(row.id)}>${t('output.open')}</button>`;
}

// OutputDialog shows one execution (GET
// /console/api/executions/{id}/output): its whole failure cause and its
// output, a SCRIPT's stderr lines marked.
export function OutputDialog({ id, onClose }) {
  const [data, setData] = useState(null);
  const [error, setError] = useState(null);
  const ref = useModal(onClose);
  useEffect(() => {
    const ctl = new AbortController();
    get(`/console/api/executions/${enc(id)}/output`, { signal: ctl.signal }).then(setData, (e) => {
      if (e.name !== 'AbortError') setError(e);
    });
    return () => ctl.abort();
  }, [id]);
  const x = data && data.execution;
  return html`<dialog ref=${ref} class="dump" id="output-dialog" aria-labelledby="output-title">
    <h2 id="output-title">${x ? t('output.title', { job: x.jobName, item: x.shardingItem, time: fmtTime(x.startTime) }) : t('output.loading')}</h2>
    ${error && html`<p class="error">${t('ui.error', { error: error.message })}</p>`}
    ${x && x.failureCause && html`<h3>${t('history.cause')}</h3><pre id="output-cause" class="dump-text">${x.failureCause}</pre>`}
    ${data && html`<h3>${t('output.output')}</h3>
      ${data.cut > 0 && html`<p class="muted small" id="output-cut">${t('output.cut', { bytes: data.cut })}</p>`}
      ${data.hasOutput
        ? html`<${OutputText} id="output-text" text=${data.output} />`
        : html`<p class="muted" id="output-none">${t('output.none')}</p>`}`}
    <div class="dialog-buttons"><button id="output-close" onClick=${onClose}>${t('ui.close')}</button></div>
  </dialog>`;
}

// OutputText shows output lines, a SCRIPT's stderr lines marked.
function OutputText({ text, id }) {
  const lines = text.replace(/\n$/, '').split('\n');
  return html`<pre id=${id} class="dump-text output">${lines.map((l) => html`<span class=${l.startsWith('err| ') ? 'stderr' : ''}>${l + '\n'}</span>`)}</pre>`;
}

// LiveOutputDialog shows a running item's output so far (GET
// /console/api/jobs/{job}/items/{item}/output, from the host that runs
// it), read again every 2 s until the item ends.
export function LiveOutputDialog({ job, item, onClose }) {
  const [data, setData] = useState(null);
  const [error, setError] = useState(null);
  const ref = useModal(onClose);
  useEffect(() => {
    const ctl = new AbortController();
    let timer = null;
    const load = () => get(`/console/api/jobs/${enc(job)}/items/${item}/output`, { signal: ctl.signal, background: true }).then((d) => {
      setData(d);
      setError(null);
      if (d.running) timer = setTimeout(load, 2000);
    }, (e) => {
      if (e.name !== 'AbortError') setError(e);
    });
    load();
    return () => {
      ctl.abort();
      clearTimeout(timer);
    };
  }, [job, item]);
  return html`<dialog ref=${ref} class="dump" id="live-dialog" aria-labelledby="live-title">
    <h2 id="live-title">${t('output.liveTitle', { job, item })}</h2>
    ${error && html`<p class="error">${t('ui.error', { error: error.message })}</p>`}
    ${data && !data.running && html`<p class="muted" id="live-ended">${t('output.liveEnded')}</p>`}
    ${data && data.cut > 0 && html`<p class="muted small">${t('output.cut', { bytes: data.cut })}</p>`}
    ${data && (data.output ? html`<${OutputText} id="live-text" text=${data.output} />` : data.running && html`<p class="muted">${t('output.liveNone')}</p>`)}
    <div class="dialog-buttons"><button id="live-close" onClick=${onClose}>${t('ui.close')}</button></div>
  </dialog>`;
}

// Updated says when the data was last refreshed, or why it could not be.
export function Updated({ poll }) {
  if (poll.error && poll.data) return html`<span class="error small">${t('app.refreshError', { error: poll.error.message })}</span>`;
  if (!poll.updatedAt) return null;
  return html`<span class="muted small">${t('ui.updated', { time: poll.updatedAt.toLocaleTimeString() })}</span>`;
}

// run calls an API write, then says how it went and refreshes.
export async function run(action, okMessage, refresh, toast) {
  try {
    await action();
    toast(okMessage);
  } catch (e) {
    toast(t('ui.error', { error: e.message }), 'error');
  }
  if (refresh) refresh();
}
