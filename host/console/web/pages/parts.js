// parts.js: what the job detail, servers and history pages share (not a
// page: not listed in index.js).
import { html, t } from '../ui.js';

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
