// Namespaces page: the registry centers and event-trace data sources an
// operator added (ejob serve's namespaces file, secrets masked), and the
// one in use of each; an admin adds, edits, removes and switches. A host
// (ejob run) shows its own namespace only, read-only.
import { useState } from 'preact/hooks';
import { html, t, usePoll, ErrorBox, toast, confirmDialog, MASK } from '../ui.js';
import { get, post, put, request, isAdmin } from '../api.js';

const kinds = {
  registry: {
    api: '/api/registry-center',
    title: 'ns.registries',
    empty: { name: '', zkAddressList: '', namespace: '', digest: '' },
    fields: [
      { key: 'name', label: 'ns.name', required: true },
      { key: 'zkAddressList', label: 'ns.servers', required: true, placeholder: 'zk1:2181,zk2:2181' },
      { key: 'namespace', label: 'ns.namespace', required: true },
      { key: 'digest', label: 'ns.digest', secret: true, placeholder: 'user:password' },
    ],
    columns: ['name', 'zkAddressList', 'namespace', 'digest'],
  },
  dataSource: {
    api: '/api/data-source',
    title: 'ns.dataSources',
    empty: { name: '', driver: 'postgres', url: '', username: '', password: '' },
    fields: [
      { key: 'name', label: 'ns.name', required: true },
      { key: 'driver', label: 'ns.driver', options: ['sqlite', 'postgres', 'mysql'] },
      { key: 'url', label: 'ns.url', required: true, wide: true, placeholder: 'jdbc:postgresql://db:5432/ejob' },
      { key: 'username', label: 'ns.username' },
      { key: 'password', label: 'ns.password', secret: true },
    ],
    columns: ['name', 'driver', 'url', 'username', 'password'],
  },
};

// EntryForm adds (original null) or edits an entry. A secret shown
// masked is sent back masked: the server keeps the stored value.
function EntryForm({ kind, original, onDone }) {
  const k = kinds[kind];
  const [v, setV] = useState(original ? { ...original } : { ...k.empty });
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const submit = async (e) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    const body = {};
    for (const f of k.fields) body[f.key] = v[f.key] ?? '';
    try {
      if (original) await put(`${k.api}/${encodeURIComponent(original.name)}`, body);
      else await post(`${k.api}/add`, body);
      toast(t(original ? 'ns.saved' : 'ns.added', { name: body.name }));
      onDone(true);
    } catch (err) {
      setError(err);
      setBusy(false);
    }
  };
  return html`<form class="ns-form form-grid" id=${'ns-form-' + kind} onSubmit=${submit}>
    ${k.fields.map((f) => html`<label class=${f.wide ? 'wide' : ''}><span>${t(f.label)}</span>
      ${f.options
        ? html`<select name=${f.key} value=${v[f.key]} onChange=${(e) => setV({ ...v, [f.key]: e.target.value })}>
            ${f.options.map((o) => html`<option value=${o}>${o}</option>`)}</select>`
        : html`<input name=${f.key} type=${f.secret ? 'password' : 'text'} autocomplete="off" required=${f.required}
            placeholder=${f.secret && original && original[f.key] === MASK ? t('ns.secretKept') : (f.placeholder || '')}
            value=${f.secret && original && v[f.key] === MASK ? '' : v[f.key]}
            onInput=${(e) => setV({ ...v, [f.key]: e.target.value === '' && f.secret && original && original[f.key] === MASK ? MASK : e.target.value })} />`}
    </label>`)}
    <div class="wide"><${ErrorBox} error=${error} /></div>
    <div class="wide dialog-buttons">
      <button type="button" onClick=${() => onDone(false)}>${t('ui.cancel')}</button>
      <button type="submit" class="primary" disabled=${busy}>${t('ui.save')}</button>
    </div>
  </form>`;
}

function EntryTable({ kind, rows, canEdit, onChange }) {
  const k = kinds[kind];
  const [form, setForm] = useState(null); // {original} while the form is open
  const [busy, setBusy] = useState(false);
  const act = async (fn, okKey, name) => {
    setBusy(true);
    try {
      await fn();
      toast(t(okKey, { name }));
      onChange();
    } catch (err) {
      toast(t('ui.error', { error: err.message }), 'error');
    } finally {
      setBusy(false);
    }
  };
  const use = (r) => act(() => post(`${k.api}/connect`, { name: r.name }), 'ns.switched', r.name);
  const remove = async (r) => {
    if (!(await confirmDialog(t('ns.confirmRemove', { name: r.name }), { confirm: t('ns.remove'), danger: true }))) return;
    act(() => request('DELETE', `${k.api}/${encodeURIComponent(r.name)}`), 'ns.removed', r.name);
  };
  return html`<section class="ns-section" id=${'ns-' + kind}>
    <div class="toolbar"><h2 class="grow">${t(k.title)}</h2>
      ${canEdit && !form && html`<button class="primary ns-add" onClick=${() => setForm({ original: null })}>${t('ns.add')}</button>`}
    </div>
    ${form && html`<${EntryForm} kind=${kind} original=${form.original}
      onDone=${(changed) => { setForm(null); if (changed) onChange(); }} />`}
    <div class="table-scroll"><table class="plain ns-table">
      <thead><tr>${k.columns.map((c) => html`<th>${t('ns.col.' + c)}</th>`)}<th>${t('ns.col.state')}</th>
        ${canEdit && html`<th>${t('ns.col.actions')}</th>`}</tr></thead>
      <tbody>${rows.length === 0 && html`<tr><td colspan="7" class="muted">${t('ns.none')}</td></tr>`}
      ${rows.map((r) => html`<tr class=${r.activated ? 'ns-active' : ''} data-name=${r.name}>
        ${k.columns.map((c) => html`<td class=${r[c] === MASK || (typeof r[c] === 'string' && r[c].includes(MASK)) ? 'masked' : ''}
          title=${r[c] === MASK ? t('ui.masked') : ''}>${r[c] || html`<span class="muted">${t('ui.never')}</span>`}</td>`)}
        <td>${r.activated ? html`<span class="badge badge-ok">${t('ns.inUse')}</span>` : ''}
          ${r.builtin ? html` <span class="badge badge-pending" title=${t('ns.builtinHint')}>${t('ns.builtin')}</span>` : ''}</td>
        ${canEdit && html`<td class="ns-actions">
          ${!r.activated && html`<button class="small ns-use" disabled=${busy} onClick=${() => use(r)}>${t('ns.use')}</button>`}
          ${!r.builtin && html`<button class="small ns-edit" disabled=${busy} onClick=${() => setForm({ original: r })}>${t('ns.edit')}</button>`}
          ${!r.builtin && !r.activated && html`<button class="small danger ns-remove" disabled=${busy} onClick=${() => remove(r)}>${t('ns.remove')}</button>`}
        </td>`}
      </tr>`)}</tbody>
    </table></div>
  </section>`;
}

function Namespaces() {
  const { data, error, refresh } = usePoll(() => get('/api/namespaces'), 10000);
  const canEdit = !!data && data.switchable && isAdmin();
  return html`<section class="ns-page">
    <h1>${t('ns.title')}</h1>
    <${ErrorBox} error=${error} />
    ${data && !data.switchable && html`<p class="muted ns-note" id="ns-host-note">${t('ns.hostOnly')}</p>`}
    ${data && data.switchable && !isAdmin() && html`<p class="muted ns-note" id="ns-readonly-note">${t('ns.readOnly')}</p>`}
    ${data && data.fileError && html`<p class="error" role="alert" id="ns-file-error">${data.fileError}</p>`}
    ${data && data.switchable && html`<p class="muted ns-note">${t('ns.file', { file: data.file })}</p>`}
    ${data && html`
      <${EntryTable} kind="registry" rows=${data.registryCenters} canEdit=${canEdit} onChange=${refresh} />
      <${EntryTable} kind="dataSource" rows=${data.dataSources} canEdit=${canEdit} onChange=${refresh} />`}
  </section>`;
}

export const routes = [{ path: '/namespaces', view: Namespaces, nav: 'nav.namespaces', title: 'ns.title', order: 90 }];
