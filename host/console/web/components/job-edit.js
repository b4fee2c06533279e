// The job edit form: every key of the job's configuration, validated by
// the server as `ejob job set` validates (nothing is written when a key is
// wrong, and each wrong key says why), a live preview of the next 5 fire
// times while the cron or the time zone is typed (computed by the server
// with core/cron, so every syntax ejob accepts is previewed), and props
// whose secret values stay masked (sent back unchanged, they keep their
// stored value).
import { useEffect, useRef, useState } from 'preact/hooks';
import { html, t, fmtTime, toast } from '../ui.js';
import { get, put, enc } from '../api.js';

const TEXT = ['cron', 'timeZone', 'shardingItemParameters', 'jobParameter', 'description', 'jobShardingStrategyType',
  'jobExecutorServiceHandlerType', 'jobErrorHandlerType', 'label'];
const NUMBERS = ['shardingTotalCount', 'maxTimeDiffSeconds', 'reconcileIntervalMinutes'];
const FLAGS = ['monitorExecution', 'failover', 'misfire', 'disabled', 'overwrite', 'staticSharding'];

// The config keys' names as the server's field errors spell them.
const FIELD_ALIASES = { jobExecutorThreadPoolSizeProviderType: 'jobExecutorServiceHandlerType' };

// useCronPreview asks the server for the next fire times of cron in tz,
// 250 ms after the last keystroke.
function useCronPreview(cron, tz) {
  const [state, setState] = useState({ times: null, error: null });
  useEffect(() => {
    if (!cron.trim()) {
      setState({ times: null, error: null, oneOff: true });
      return undefined;
    }
    const ctl = new AbortController();
    const timer = setTimeout(async () => {
      try {
        const m = await get(`/console/api/cron/preview?cron=${enc(cron)}&timeZone=${enc(tz)}&n=5`, { signal: ctl.signal });
        setState(m.error ? { times: null, error: m.error } : { times: m.fireTimes, error: null, kind: m.kind });
      } catch (e) {
        if (e.name !== 'AbortError') setState({ times: null, error: e.message });
      }
    }, 250);
    return () => {
      clearTimeout(timer);
      ctl.abort();
    };
  }, [cron, tz]);
  return state;
}

function Field({ name, errors, children, wide }) {
  return html`<label class=${wide ? 'wide' : ''}><span>${t('edit.' + name)}</span>${children}
    ${errors[name] ? html`<div class="field-error" id=${'err-' + name}>${errors[name]}</div>` : null}</label>`;
}

export function EditDialog({ job, onClose, onSaved }) {
  const dlg = useRef(null);
  const [model, setModel] = useState(null);
  const [cfg, setCfg] = useState(null);
  const [props, setProps] = useState([]);
  const [errors, setErrors] = useState({});
  const [message, setMessage] = useState(null);
  const [saving, setSaving] = useState(false);

  useEffect(() => {
    dlg.current.showModal();
    get(`/console/api/jobs/${enc(job)}/config`).then((m) => {
      setModel(m);
      setCfg({ ...m.config, jobListenerTypes: (m.config.jobListenerTypes || []).join(', ') });
      setProps(Object.keys(m.config.props || {}).sort().map((k) => ({ key: k, value: m.config.props[k] })));
    }).catch((e) => setMessage(e.message));
  }, [job]);

  const preview = useCronPreview(cfg ? cfg.cron : '', cfg ? cfg.timeZone : '');
  const set = (k) => (e) => {
    setCfg({ ...cfg, [k]: e.target.type === 'checkbox' ? e.target.checked : e.target.value });
    if (errors[k]) setErrors({ ...errors, [k]: undefined });
  };

  async function save(e) {
    e.preventDefault();
    setSaving(true);
    setErrors({});
    setMessage(null);
    const config = { ...cfg, jobListenerTypes: cfg.jobListenerTypes.split(',').map((s) => s.trim()).filter(Boolean), props: {} };
    for (const n of NUMBERS) config[n] = cfg[n] === '' ? NaN : Number(cfg[n]);
    const bad = NUMBERS.filter((n) => !Number.isInteger(config[n]));
    if (bad.length) {
      setErrors(Object.fromEntries(bad.map((n) => [n, t('edit.notInteger')])));
      setSaving(false);
      return;
    }
    for (const p of props) if (p.key.trim()) config.props[p.key.trim()] = p.value;
    try {
      await put(`/console/api/jobs/${enc(job)}/config`, { config, version: model.version });
      toast(t('edit.saved', { job }));
      dlg.current.close();
      onSaved();
    } catch (err) {
      const m = err.body && err.body.model;
      const fields = {};
      if (m && m.fields) for (const [k, v] of Object.entries(m.fields)) fields[FIELD_ALIASES[k] || k] = v;
      setErrors(fields);
      setMessage(t('edit.invalid', { error: err.message }));
    } finally {
      setSaving(false);
    }
  }

  const close = () => {
    dlg.current.close();
    onClose();
  };
  const masked = new Set(model ? model.maskedProps : []);
  return html`<dialog ref=${dlg} id="edit-dialog" onCancel=${(e) => { e.preventDefault(); close(); }}>
    <h2>${t('edit.title', { job })}</h2>
    ${!cfg ? html`<p class="muted">${message || t('edit.loading')}</p>` : html`
    <form id="edit-form" onSubmit=${save} novalidate>
      <div class="form-grid">
        <${Field} name="cron" errors=${errors}>
          <input id="edit-cron" class="mono" value=${cfg.cron} onInput=${set('cron')} placeholder="0 0/5 * * * ?" autocomplete="off" spellcheck="false" />
          <small class="muted">${t('edit.cronHelp')}</small>
        </${Field}>
        <${Field} name="timeZone" errors=${errors}>
          <input id="edit-timeZone" value=${cfg.timeZone} onInput=${set('timeZone')} placeholder="Asia/Shanghai" autocomplete="off" />
          <small class="muted">${t('edit.timeZoneHelp')}</small>
        </${Field}>
        <div class="wide" id="cron-preview" aria-live="polite">
          ${preview.oneOff ? html`<p class="muted">${t('edit.previewOneOff')}</p>`
            : preview.error ? html`<p class="field-error" id="cron-preview-error">${preview.error}</p>`
            : preview.times ? html`<div class="muted">${t('edit.preview')}</div>
                ${preview.times.length ? html`<ol class="preview">${preview.times.map((x) => html`<li>${fmtTime(x)}</li>`)}</ol>`
                  : html`<p class="muted">${t('edit.previewNone')}</p>`}` : null}
        </div>
        ${NUMBERS.map((n) => html`<${Field} name=${n} errors=${errors}>
          <input id=${'edit-' + n} type="number" step="1" value=${cfg[n]} onInput=${set(n)} /></${Field}>`)}
        ${TEXT.filter((n) => n !== 'cron' && n !== 'timeZone').map((n) => html`<${Field} name=${n} errors=${errors} wide=${n === 'description' || n === 'shardingItemParameters'}>
          <input id=${'edit-' + n} value=${cfg[n]} onInput=${set(n)} autocomplete="off" /></${Field}>`)}
        <${Field} name="jobListenerTypes" errors=${errors}>
          <input id="edit-jobListenerTypes" value=${cfg.jobListenerTypes} onInput=${set('jobListenerTypes')} autocomplete="off" /></${Field}>
        <div class="wide flags">${FLAGS.map((n) => html`<label class="check"><input id=${'edit-' + n} type="checkbox" checked=${cfg[n]} onChange=${set(n)} />${t('edit.' + n)}</label>`)}
          ${FLAGS.filter((n) => errors[n]).map((n) => html`<div class="field-error">${n}: ${errors[n]}</div>`)}</div>
        <fieldset class="wide props-edit"><legend>${t('edit.props')}</legend>
          ${props.map((p, i) => html`<div class="prop-row">
            <input aria-label=${t('edit.propKey')} class="mono" value=${p.key} onInput=${(e) => setProps(props.map((x, j) => (j === i ? { ...x, key: e.target.value } : x)))} />
            <input aria-label=${t('edit.propValue')} class=${'mono' + (masked.has(p.key) ? ' masked' : '')} value=${p.value}
              title=${masked.has(p.key) ? t('edit.maskedHint') : ''}
              type=${masked.has(p.key) && p.value === model.config.props[p.key] ? 'password' : 'text'}
              onInput=${(e) => setProps(props.map((x, j) => (j === i ? { ...x, value: e.target.value } : x)))} />
            <button type="button" class="small" onClick=${() => setProps(props.filter((_, j) => j !== i))}>${t('edit.removeProp')}</button>
          </div>`)}
          ${Object.keys(errors).filter((k) => k.startsWith('props')).map((k) => html`<div class="field-error">${k}: ${errors[k]}</div>`)}
          <button type="button" class="small" id="edit-add-prop" onClick=${() => setProps([...props, { key: '', value: '' }])}>${t('edit.addProp')}</button>
        </fieldset>
      </div>
      ${message ? html`<p class="error" id="edit-error" role="alert">${message}</p>` : null}
      <div class="dialog-buttons">
        <button type="button" id="edit-cancel" onClick=${close}>${t('ui.cancel')}</button>
        <button type="submit" id="edit-save" class="primary" disabled=${saving}>${t('ui.save')}</button>
      </div>
    </form>`}
  </dialog>`;
}
