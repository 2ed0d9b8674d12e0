// Token positions logic (lesson 7, "GPU memory"): a batch of `batch` tickets of `seq`
// tokens holds batch × seq token positions; activations grow with positions, attention
// scores with batch × seq². Pure functions, no DOM, so the tests can hold the lesson's
// numbers: 32 × 128 = 4,096; halving the batch or the sequence halves the positions
// (50%); halving the sequence cuts attention scores to 25%. The byte figures use the
// running example's 768 features and 12 heads in FP32, as the lesson does.

export const HIDDEN = 768;
export const HEADS = 12;
export const FP32_BYTES = 4;

export function tokenPositions(batch, seq) {
  return batch * seq;
}

/** Elements of the attention scores, (batch, heads, seq, seq), divided by heads. */
export function attentionCells(batch, seq) {
  return batch * seq * seq;
}

/** One hidden-state tensor (batch, seq, 768) in FP32. */
export function hiddenStateBytes(batch, seq) {
  return batch * seq * HIDDEN * FP32_BYTES;
}

/** One layer's attention scores (batch, 12, seq, seq) in FP32. */
export function attentionScoreBytes(batch, seq) {
  return batch * HEADS * seq * seq * FP32_BYTES;
}

/** Shares of the starting configuration, in percent. */
export function compare(start, now) {
  return {
    positions: tokenPositions(now.batch, now.seq),
    startPositions: tokenPositions(start.batch, start.seq),
    positionsPercent: (100 * tokenPositions(now.batch, now.seq)) / tokenPositions(start.batch, start.seq),
    attentionPercent: (100 * attentionCells(now.batch, now.seq)) / attentionCells(start.batch, start.seq),
  };
}

/** Halving that stays a whole number of tickets or tokens (1 stays 1). */
export function halve(n) {
  return Math.max(1, Math.floor(n / 2));
}

/** 50 → "50%", 6.25 → "6.25%", 33.333 → "33.33%". */
export function formatPercent(p) {
  const rounded = Math.round(p * 100) / 100;
  return `${rounded.toLocaleString('en-US', { maximumFractionDigits: 2 })}%`;
}

/** Decimal megabytes as the lesson writes them: 12,582,912 B → "12.58 MB". */
export function megabytes(bytes) {
  return `${(bytes / 1e6).toFixed(2)} MB`;
}
