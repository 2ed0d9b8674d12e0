// Predict, then measure: the pure part of the prediction step every live-experiment
// panel shows before Run (panel-predict.js draws it). Which question applies, the
// question with the current parameters filled in, the log-scale slider's mapping, the
// choices of a power-of-two question, and the score as the server computes it
// (server/experiments/prediction.rs) so a reveal reads the same either way.

/** The backend word a question's `on` is compared with: `gpu` or `cpu`. */
export function backendOf(device) {
  return device && device.kind === 'cuda' ? 'gpu' : 'cpu';
}

/**
 * The first of `questions` (from /api/device) that applies on `backend` with the
 * parameter `values`, or null: the same rule as the server's `prediction::pick`.
 */
export function pickQuestion(questions, backend, values) {
  return (questions || []).find((q) => {
    if (q.on !== 'any' && q.on !== backend) return false;
    if (!q.when) return true;
    const [field, value] = q.when;
    return String(values[field]) === value;
  }) || null;
}

/** The question with each `{field}` replaced by `labels[field]` (or the raw value). */
export function fillQuestion(text, values, labels = {}) {
  return text.replace(/\{([a-z_]+)\}/g, (whole, field) => {
    if (labels[field] !== undefined) return String(labels[field]);
    return values[field] !== undefined ? String(values[field]) : whole;
  });
}

/** Slider positions 0…STEPS map to min…max on a log scale. */
export const STEPS = 1000;

export function sliderToValue(position, min, max) {
  const t = Math.min(Math.max(Number(position) / STEPS, 0), 1);
  return roundSig(Math.exp(Math.log(min) + t * (Math.log(max) - Math.log(min))), 2);
}

export function valueToSlider(value, min, max) {
  if (!(value > 0)) return 0;
  const t = (Math.log(value) - Math.log(min)) / (Math.log(max) - Math.log(min));
  return Math.round(Math.min(Math.max(t, 0), 1) * STEPS);
}

/** `x` to `digits` significant figures (as a number). */
export function roundSig(x, digits) {
  if (!Number.isFinite(x) || x === 0) return x;
  return Number(x.toPrecision(digits));
}

/** The powers of two from `min` to `max` (at most `limit`, the sweep's largest). */
export function powersOfTwo(min, max, limit = Infinity) {
  const out = [];
  for (let n = 2 ** Math.ceil(Math.log2(min)); n <= Math.min(max, limit); n *= 2) out.push(n);
  return out;
}

/**
 * A typed prediction: a finite number from 0 to 1e12, or null with the reason.
 * Accepts what people type: spaces, thousands separators, a trailing unit or ×.
 */
export function parsePrediction(text) {
  let cleaned = String(text).trim().replace(/,/g, '');
  // A unit after the number (`12 GB/s`, `3×`) is dropped; words alone are not numbers.
  const withUnit = cleaned.match(/^(.*?\d\.?)\s*[a-zA-Z×/%][a-zA-Z×/%\s]*$/);
  if (withUnit) [, cleaned] = withUnit;
  if (cleaned === '') return { value: null, error: 'Enter your prediction, or press “Just run it”.' };
  const value = Number(cleaned);
  if (!Number.isFinite(value) || value < 0 || value > 1e12) {
    return { value: null, error: `“${text}” is not a number from 0 to 10¹². Enter your prediction, or press “Just run it”.` };
  }
  return { value, error: null };
}

/** `2.3×`, `14×`, `1.05×`: the server's format_factor. */
export function formatFactor(f) {
  if (f >= 10) return `${f.toFixed(0)}×`;
  if (f >= 1.1) return `${f.toFixed(1)}×`;
  return `${f.toFixed(2)}×`;
}

/** A value with its unit, for the reveal (`n` sizes and choices are plain). */
export function formatValue(value, question) {
  if (question && question.input === 'choice') {
    const choice = (question.choices || []).find((c) => c.value === value);
    return choice ? choice.label : String(value);
  }
  if (question && question.input === 'pow2') return value === 0 ? 'never' : `n = ${value}`;
  const sig = Math.abs(value) >= 100 || value === 0 ? String(Math.round(value)) : String(roundSig(value, 3));
  const unit = question ? question.unit : '';
  if (!unit) return sig;
  return unit === '×' ? `${sig}×` : `${sig} ${unit}`;
}

/** One sentence for the reveal, from the server's score. */
export function revealSentence(score, question) {
  return `You predicted ${formatValue(score.predicted, question)}; this server measured ${formatValue(score.measured, question)}: ${score.verdict}.`;
}
