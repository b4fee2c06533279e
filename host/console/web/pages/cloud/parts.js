// parts.js: what the cloud pages share (not a page: not listed in
// index.js).
import { html, t } from '../../ui.js';
import { get } from '../../api.js';

// withDisabled adds to each row its disabled flag, read from the path
// flagPath(row) gives (GET /api/app/{name}/disable, /api/job/{name}/disable).
export async function withDisabled(rows, flagPath, opts) {
  const flags = await Promise.all((rows || []).map((r) => get(flagPath(r), opts)));
  return (rows || []).map((r, i) => ({ ...r, disabled: flags[i] === true }));
}

// Enabled shows an app's or job's state.
export function Enabled({ disabled }) {
  return disabled
    ? html`<span class="badge badge-disabled">${t('cloud.disabled')}</span>`
    : html`<span class="badge badge-success">${t('cloud.enabled')}</span>`;
}

// Items lists sharding items.
export function Items({ items }) {
  return html`<span class="mono">${(items || []).join(', ')}</span>`;
}

// Toggle is an admin's enable button (when disabled) or disable button;
// it calls op('enable') or op('disable').
export function Toggle({ disabled, op }) {
  return disabled
    ? html`<button class="small op-enable" onClick=${() => op('enable')}>${t('cloud.enable')}</button>`
    : html`<button class="small op-disable" onClick=${() => op('disable')}>${t('cloud.disable')}</button>`;
}
