// The "What a GPU shows" aside beside a panel on the CPU backend: reference results
// from GET /api/reference-runs (fetched once per page), picked and labelled by
// logic/reference-overlay.js. Published peaks keep their "not measured" label and a
// link to their source; recorded runs keep their provenance. The same runs add, under a
// prediction's reveal, what a recorded GPU measured for that question.

import { el, richText } from '../dom.js';
import { referenceOverlay, recordedMeasurements, ownRunFiles } from '../logic/reference-overlay.js';
import { formatSig } from '../logic/panel-format.js';

let referencesPromise = null;

function loadReferences() {
  if (!referencesPromise) {
    const json = (url) => fetch(url, { headers: { Accept: 'application/json' } })
      .then((r) => (r.ok ? r.json() : []))
      .catch(() => []);
    referencesPromise = Promise.all([json('/api/reference-runs'), json('/api/me/gpu-runs')])
      .then(([course, own]) => [...course, ...ownRunFiles(own)]);
  }
  return referencesPromise;
}

/** An <aside> for `experiment`, filled once the references arrive. */
export function referenceAside(experiment) {
  const aside = el('aside', { class: 'exp-reference', 'data-reference-for': experiment });
  loadReferences().then((files) => {
    const o = referenceOverlay(files, experiment);
    const items = [
      ...o.published.map((p) => el('li', { class: 'exp-reference-published' },
        el('strong', {}, `${p.label}: ${p.value}`), ' ', richText(p.detail), ' Source: ',
        el('a', { href: p.source.url, rel: 'noopener' }, p.source.title), '.')),
      ...o.recorded.map((r) => el('li', { class: r.own ? 'exp-reference-recorded exp-reference-own' : 'exp-reference-recorded' },
        el('strong', {}, r.label), ` (${r.provenance})`, r.numbers.length ? `: ${r.numbers.join('; ')}.` : '.')),
    ];
    aside.append(
      el('p', { class: 'exp-chart-title' }, o.heading),
      o.empty ? el('p', {}, richText(o.empty)) : el('ul', {}, items),
    );
  });
  return aside;
}

/**
 * Under a reveal on the CPU backend: what each recorded GPU run measured of the quantity
 * the learner predicted (`key`), or of the quantity that GPU was asked; empty when no
 * run recorded it.
 */
export function recordedBesideReveal(experiment, key) {
  const box = el('div', { class: 'exp-reveal-recorded', 'data-recorded-for': experiment });
  loadReferences().then((files) => {
    const runs = recordedMeasurements(files, experiment, key);
    if (!runs.length) return;
    box.append(el('ul', {}, ...runs.map((r) => el('li', { class: r.fixture ? 'exp-reference-fixture' : (r.own ? 'exp-reference-own' : '') },
      el('strong', {}, `${r.label}: ${formatSig(r.value)}${r.unit ? ` ${r.unit}` : ''}`),
      r.sameQuestion ? ' for the same question' : ` (its question there: ${r.quantity})`,
      ` — ${r.provenance}.`))));
  });
  return box;
}
