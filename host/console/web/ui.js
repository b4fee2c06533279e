// ui.js: shared UI helpers for the pages: html (htm bound to Preact), t,
// time formatting in the user's zone, toasts, a confirm dialog, polling
// that keeps the page's state, masked props, status badges and a Tabulator
// wrapper that keeps the user's sort and filters across data refreshes.
import { h } from 'preact';
import { useEffect, useRef, useState, useCallback } from 'preact/hooks';
import htm from 'htm';
import { t } from './i18n/t.js';

export const html = htm.bind(h);
export { t };

// The user's time zone (the browser's).
export const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;

const dateTime = new Intl.DateTimeFormat(undefined, {
  year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit',
});

// fmtTime formats a time (Date, epoch ms or an ISO string) in the user's zone.
export function fmtTime(v) {
  if (v === null || v === undefined || v === '' || v === 0) return t('ui.never');
  const d = v instanceof Date ? v : new Date(v);
  if (Number.isNaN(d.getTime())) return String(v);
  return dateTime.format(d);
}

const timeOnly = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit', second: '2-digit' });
const monthDay = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' });

// fmtShort formats a time compactly for a table cell: the time of day
// today, else the day and time (fmtTime gives the whole).
export function fmtShort(v) {
  if (!v) return t('ui.never');
  const d = new Date(v);
  if (Number.isNaN(d.getTime())) return String(v);
  return d.toDateString() === new Date().toDateString() ? timeOnly.format(d) : monthDay.format(d);
}

const rtf = new Intl.RelativeTimeFormat(undefined, { numeric: 'auto' });

// fmtRelative says how far v is from now ("in 3 min", "2 h ago").
export function fmtRelative(v, now = Date.now()) {
  if (!v) return '';
  const ms = new Date(v).getTime() - now;
  const abs = Math.abs(ms);
  if (abs < 60e3) return rtf.format(Math.round(ms / 1e3), 'second');
  if (abs < 3600e3) return rtf.format(Math.round(ms / 60e3), 'minute');
  if (abs < 86400e3) return rtf.format(Math.round(ms / 3600e3), 'hour');
  return rtf.format(Math.round(ms / 86400e3), 'day');
}

// fmtDuration formats milliseconds.
export function fmtDuration(ms) {
  if (ms === null || ms === undefined) return t('ui.never');
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60e3) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.floor(ms / 60e3)} min ${Math.round((ms % 60e3) / 1000)} s`;
}

// toast shows a short message at the bottom of the screen.
export function toast(message, kind = 'info') {
  let box = document.getElementById('toasts');
  if (!box) {
    box = document.createElement('div');
    box.id = 'toasts';
    box.setAttribute('role', 'status');
    box.setAttribute('aria-live', 'polite');
    document.body.append(box);
  }
  const el = document.createElement('div');
  el.className = `toast toast-${kind}`;
  el.textContent = message;
  box.append(el);
  setTimeout(() => el.remove(), kind === 'error' ? 8000 : 4000);
}

// confirmDialog asks a yes/no question in a modal <dialog>; it resolves
// true on confirm.
export function confirmDialog(message, { confirm = t('ui.confirm'), danger = false } = {}) {
  return new Promise((resolve) => {
    const d = document.createElement('dialog');
    d.className = 'confirm';
    const p = document.createElement('p');
    p.textContent = message;
    const row = document.createElement('div');
    row.className = 'dialog-buttons';
    const no = document.createElement('button');
    no.type = 'button';
    no.textContent = t('ui.cancel');
    no.className = 'confirm-cancel';
    const yes = document.createElement('button');
    yes.type = 'button';
    yes.textContent = confirm;
    yes.className = danger ? 'danger confirm-ok' : 'primary confirm-ok';
    row.append(no, yes);
    d.append(p, row);
    document.body.append(d);
    const done = (v) => {
      d.close();
      d.remove();
      resolve(v);
    };
    no.onclick = () => done(false);
    yes.onclick = () => done(true);
    d.addEventListener('cancel', (e) => {
      e.preventDefault();
      done(false);
    });
    d.showModal();
    yes.focus();
  });
}

// usePoll calls load(opts) now and every ms while the page is visible and
// keeps its last answer: {data, error, loading, refresh, updatedAt}. The
// component's own state (filters, sort) is untouched by a refresh. The
// timer's calls get opts {background: true}: pass it to api.get so they do
// not keep the session alive.
export function usePoll(load, ms, deps = []) {
  const [state, setState] = useState({ data: null, error: null, loading: true, updatedAt: null });
  const loadRef = useRef(load);
  loadRef.current = load;
  const refresh = useCallback(async (opts = {}) => {
    try {
      const data = await loadRef.current(opts);
      setState({ data, error: null, loading: false, updatedAt: new Date() });
    } catch (error) {
      setState((s) => ({ ...s, error, loading: false }));
    }
  }, []);
  useEffect(() => {
    let timer = null;
    let stopped = false;
    const tick = async () => {
      if (stopped) return;
      if (document.visibilityState !== 'hidden') await refresh({ background: timer !== null });
      if (!stopped) timer = setTimeout(tick, ms);
    };
    tick();
    const onVisible = () => document.visibilityState === 'visible' && refresh({ background: true });
    document.addEventListener('visibilitychange', onVisible);
    return () => {
      stopped = true;
      clearTimeout(timer);
      document.removeEventListener('visibilitychange', onVisible);
    };
  }, deps);
  return { ...state, refresh };
}

// StatusBadge shows a job or item status with its colour.
export function StatusBadge({ status }) {
  const s = String(status || '').toUpperCase();
  return html`<span class=${'badge badge-' + s.toLowerCase().replace(/_/g, '-')}>${t('status.' + s) === 'status.' + s ? s : t('status.' + s)}</span>`;
}

// MaskedProps lists props; values the server masked show as a lock.
export const MASK = '***'; // the server's mask of a secret (spi/redact.Mask)
export function MaskedProps({ props }) {
  const keys = Object.keys(props || {}).sort();
  if (keys.length === 0) return html`<span class="muted">${t('ui.never')}</span>`;
  return html`<dl class="props">${keys.map((k) => html`<dt>${k}</dt><dd class=${props[k] === MASK ? 'masked' : ''}
    title=${props[k] === MASK ? t('ui.masked') : ''}>${props[k]}</dd>`)}</dl>`;
}

// ErrorBox shows an error (an ApiError's server message) or nothing.
export function ErrorBox({ error }) {
  if (!error) return null;
  return html`<p class="error" role="alert">${t('ui.error', { error: error.message || String(error) })}</p>`;
}

// DataTable renders a Tabulator table: options is Tabulator's (columns,
// initialSort...), rows the data. New rows replace the data in place, so
// the user's sort, header filters and scroll position stay. onTable gets
// the Tabulator instance once built.
export function DataTable({ options, rows, onTable, id }) {
  const el = useRef(null);
  const table = useRef(null);
  const built = useRef(false);
  const pending = useRef(null);
  useEffect(() => {
    let cancelled = false;
    import('tabulator-tables').then(({ TabulatorFull }) => {
      if (cancelled) return;
      const tab = new TabulatorFull(el.current, {
        // An explicit height keeps the rendering virtual (only the rows in
        // view are in the DOM); a height of '100%' let Tabulator draw all
        // 1,000 rows.
        layout: 'fitColumns', responsiveLayout: 'collapse', height: '70vh', placeholder: t('ui.never'),
        ...options, data: rows || [],
      });
      tab.on('tableBuilt', () => {
        built.current = true;
        if (pending.current) {
          tab.replaceData(pending.current);
          pending.current = null;
        }
        if (onTable) onTable(tab);
      });
      table.current = tab;
    });
    return () => {
      cancelled = true;
      if (table.current) table.current.destroy();
      table.current = null;
      built.current = false;
    };
  }, []);
  useEffect(() => {
    if (!rows) return;
    if (table.current && built.current) table.current.replaceData(rows);
    else pending.current = rows;
  }, [rows]);
  return html`<div class="data-table" id=${id} ref=${el}></div>`;
}

// useInterval re-renders every ms (for relative times).
export function useNow(ms = 30e3) {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const id = setInterval(() => setNow(Date.now()), ms);
    return () => clearInterval(id);
  }, [ms]);
  return now;
}
