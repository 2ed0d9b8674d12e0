// The "What a GPU shows" aside beside a panel on the CPU backend: reference results
// from GET /api/reference-runs (fetched once per page), picked and labelled by
// logic/reference-overlay.js. Published peaks keep their "not measured" label and a
// link to their source; recorded runs keep their provenance.

import { el, richText } from '../dom.js';
import { referenceOverlay } from '../logic/reference-overlay.js';

let referencesPromise = null;

function loadReferences() {
  if (!referencesPromise) {
    referencesPromise = fetch('/api/reference-runs', { headers: { Accept: 'application/json' } })
      .then((r) => (r.ok ? r.json() : []))
      .catch(() => []);
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
      ...o.recorded.map((r) => el('li', { class: 'exp-reference-recorded' },
        el('strong', {}, r.label), ` (${r.provenance})`, r.numbers.length ? `: ${r.numbers.join('; ')}.` : '.')),
    ];
    aside.append(
      el('p', { class: 'exp-chart-title' }, o.heading),
      o.empty ? el('p', {}, richText(o.empty)) : el('ul', {}, items),
    );
  });
  return aside;
}
