// Answers a student might give, built from the public quiz (GET /api/quizzes/{id}: kind
// and options, never the key): a random option for single choice, a random subset for
// multiple choice, a plausible number for numeric. Random answers give a spread of scores,
// which is what the durability check compares (student, quiz, correct, total).

/** A small seeded PRNG (mulberry32), so a run can be repeated with --seed. */
export function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** `{question id: answer}` for the JSON API. */
export function jsonAnswers(quiz, random) {
  const answers = {};
  for (const q of quiz.questions) {
    const n = q.options?.length ?? 0;
    if (q.kind === 'single') answers[q.id] = Math.floor(random() * n);
    else if (q.kind === 'multiple') answers[q.id] = [...Array(n).keys()].filter(() => random() < 0.5);
    else answers[q.id] = Math.round(random() * 1000) / 10;
  }
  return answers;
}

/** The same answers as form pairs (`q.<id>`), for the no-JavaScript form. */
export function formAnswers(quiz, random) {
  const pairs = [];
  for (const [id, value] of Object.entries(jsonAnswers(quiz, random))) {
    if (Array.isArray(value)) for (const v of value) pairs.push([`q.${id}`, String(v)]);
    else pairs.push([`q.${id}`, String(value)]);
  }
  return pairs;
}
