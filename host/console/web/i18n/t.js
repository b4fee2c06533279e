// t(key, vars): the string of key ("group.name") in the user's language
// (English until a translation module is added next to en.js), with {var}
// replaced from vars, and {var|one|other} by "one" when vars[var] is 1 and
// by "other" otherwise (plurals: '{n} {n|job|jobs}'). A missing key shows
// as the key itself.
import { en } from './en.js';

const catalogs = { en };

function pick() {
  for (const lang of navigator.languages || [navigator.language || 'en']) {
    const base = String(lang).split('-')[0];
    if (catalogs[lang]) return catalogs[lang];
    if (catalogs[base]) return catalogs[base];
  }
  return en;
}

const catalog = pick();

export function t(key, vars) {
  let s = catalog[key] ?? en[key];
  if (s === undefined) return key;
  if (vars) {
    s = s.replace(/\{(\w+)\|([^|}]*)\|([^}]*)\}/g, (m, k, one, other) => (k in vars ? (Number(vars[k]) === 1 ? one : other) : m));
    s = s.replace(/\{(\w+)\}/g, (m, k) => (k in vars ? String(vars[k]) : m));
  }
  return s;
}
