// Reads a measured panel's numbers back from the page and checks the verdict under the
// chart against them, independently of web/static/js/logic/measured-verdicts.js: a ratio
// in the caption must match the shown medians and their direction, "no measurable
// difference" must not sit beside a gap far outside the shown spreads, and on the CPU
// backend the caption must never present a gap as the cost of reading the loss.

/** "1.23 ms" / "450 µs" / "2 s" → milliseconds. */
export function parseMs(text) {
  const m = /([\d.,]+)\s*(ns|µs|ms|s)\b/.exec(text);
  if (!m) return NaN;
  return Number(m[1].replace(/,/g, '')) * { ns: 1e-6, 'µs': 1e-3, ms: 1, s: 1e3 }[m[2]];
}

/** "1.2 ms (1.1 ms–1.5 ms)" → {median, min, max} in ms. */
export function parseSpread(text) {
  const [median, rest = ''] = text.split('(');
  const [min, max = ''] = rest.split('–');
  return { median: parseMs(median), min: parseMs(min), max: parseMs(max) };
}

/** Asserts `caption` agrees with medians `a` (every step) and `b`, spread `noise` (ms). */
export function assertConsistent(assert, caption, a, b, noise, cpu) {
  const ratio = /came out ([\d.]+)× (slower|faster)|made each step ([\d.]+)× slower/.exec(caption);
  if (/No measurable difference/.test(caption)) {
    assert.ok(Math.abs(a - b) <= Math.max(noise, 0.05 * Math.min(a, b)) * 1.5,
      `"no measurable difference" beside medians ${a} and ${b} (noise ${noise}): ${caption}`);
  } else {
    assert.ok(ratio, `a caption with a gap states its size: ${caption}`);
    const shown = Number(ratio[1] || ratio[3]);
    const measured = a > b ? a / b : b / a;
    assert.ok(Math.abs(shown - measured) <= 0.15 * measured + 0.1, `caption ratio ${shown}× vs shown medians ${a}, ${b}: ${caption}`);
    assert.equal(ratio[2] === 'faster', a < b, `direction matches the medians ${a}, ${b}: ${caption}`);
  }
  if (cpu) {
    assert.match(caption, /waits for nothing/, `the CPU caption says a read costs nothing there: ${caption}`);
    assert.match(caption, /On a GPU.*sync point/, `the CPU caption explains the GPU's sync: ${caption}`);
    assert.doesNotMatch(caption, /made each step/, `the CPU caption does not blame the reads: ${caption}`);
  }
}
