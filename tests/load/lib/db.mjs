// Reads the server's SQLite file after a run, to check acknowledged quiz attempts against
// what was really stored: python3's sqlite3 module when there is a python3, else the
// sqlite3 command-line shell. Read-only (`mode=ro` URI), one short query at a time.

import { execFileSync } from 'node:child_process';

const PY = `
import json, sqlite3, sys
con = sqlite3.connect("file:" + sys.argv[1] + "?mode=ro", uri=True, timeout=10)
rows = [list(r) for r in con.execute(sys.argv[2])]
print(json.dumps(rows))
`;

function have(cmd, args) {
  try {
    execFileSync(cmd, args, { stdio: 'ignore', timeout: 10_000 });
    return true;
  } catch {
    return false;
  }
}

let tool;
function pick() {
  if (tool) return tool;
  if (have('python3', ['-c', 'import sqlite3'])) tool = 'python3';
  else if (have('sqlite3', ['-version'])) tool = 'sqlite3';
  else throw new Error('reading the database needs python3 (with sqlite3) or the sqlite3 shell');
  return tool;
}

/** Rows of `sql` on the database at `file`, as arrays of column values. */
export function query(file, sql) {
  const out =
    pick() === 'python3'
      ? execFileSync('python3', ['-c', PY, file, sql], { encoding: 'utf8', timeout: 60_000, maxBuffer: 256 << 20 })
      : execFileSync('sqlite3', ['-readonly', '-json', file, sql], { encoding: 'utf8', timeout: 60_000, maxBuffer: 256 << 20 });
  const parsed = JSON.parse(out.trim() || '[]');
  return parsed.map((r) => (Array.isArray(r) ? r : Object.values(r)));
}

/** The key an acknowledged attempt is counted under: `student|quiz`, plus `|correct|total` when known. */
export function attemptKey(student, quiz, correct, total) {
  return correct === undefined ? `${student}|${quiz}` : `${student}|${quiz}|${correct}|${total}`;
}

/** Stored attempts counted by `student|quiz` and by `student|quiz|correct|total`. */
export function storedAttempts(file) {
  const counts = new Map();
  const add = (k, n) => counts.set(k, (counts.get(k) ?? 0) + n);
  for (const [student, quiz, correct, total, n] of query(
    file,
    'SELECT student_id, quiz_id, correct, total, COUNT(*) FROM attempts GROUP BY 1, 2, 3, 4',
  )) {
    add(attemptKey(student, quiz), Number(n));
    add(attemptKey(student, quiz, correct, total), Number(n));
  }
  return counts;
}

/**
 * Compares acknowledged attempts with the database. `byQuiz` counts every acknowledged
 * attempt by `student|quiz`; `byScore` counts those whose score the answer told us by
 * `student|quiz|correct|total`. `lost` is how many acknowledged attempts have no stored
 * row; `misrecorded` how many were stored with a different score than acknowledged.
 */
export function compareAttempts(byQuiz, byScore, file) {
  const stored = storedAttempts(file);
  const [[storedTotal]] = query(file, 'SELECT COUNT(*) FROM attempts');
  const short = (counts) => {
    const keys = [];
    let missing = 0;
    for (const [key, n] of counts) {
      const have = stored.get(key) ?? 0;
      if (have < n) {
        missing += n - have;
        if (keys.length < 20) keys.push({ key, acknowledged: n, stored: have });
      }
    }
    return { missing, keys };
  };
  const lost = short(byQuiz);
  const scored = short(byScore);
  let acked = 0;
  for (const n of byQuiz.values()) acked += n;
  return {
    acknowledged: acked,
    stored: Number(storedTotal),
    lost: lost.missing,
    lost_examples: lost.keys,
    misrecorded: scored.missing,
    misrecorded_examples: scored.keys,
  };
}

/** `PRAGMA integrity_check` and attempts whose answer rows do not match their total. */
export function integrity(file) {
  const check = query(file, 'PRAGMA integrity_check').map((r) => r[0]);
  const [[partial]] = query(
    file,
    'SELECT COUNT(*) FROM attempts a WHERE (SELECT COUNT(*) FROM answers WHERE attempt_id = a.id) != a.total',
  );
  return { integrity: check.join('; '), attemptsWithMissingAnswers: Number(partial) };
}
