// Text from the server or the course that marks code the Markdown way, `like this`,
// split into plain and code runs so the page can set code in <code> without ever
// parsing markup (the CSP and the escaping rules forbid innerHTML). Pure, so
// tests/js/inline-code.test.mjs can pin it.

/**
 * `text` as runs: [{text, code}]. A backtick without its pair stays as text, and an
 * empty pair (``) is left as written.
 */
export function splitInlineCode(text) {
  const source = String(text ?? '');
  const runs = [];
  let rest = source;
  for (;;) {
    const open = rest.indexOf('`');
    const close = open < 0 ? -1 : rest.indexOf('`', open + 1);
    if (open < 0 || close < 0) break;
    const code = rest.slice(open + 1, close);
    if (code === '') {
      runs.push({ text: rest.slice(0, close + 1), code: false });
    } else {
      if (open > 0) runs.push({ text: rest.slice(0, open), code: false });
      runs.push({ text: code, code: true });
    }
    rest = rest.slice(close + 1);
  }
  if (rest !== '') runs.push({ text: rest, code: false });
  // Neighbouring plain runs read as one.
  return runs.reduce((out, run) => {
    const last = out[out.length - 1];
    if (last && !last.code && !run.code) last.text += run.text;
    else out.push({ ...run });
    return out;
  }, []);
}

/** `text` with the backticks of code spans dropped: for places that take plain text. */
export function stripCodeMarks(text) {
  return splitInlineCode(text).map((run) => run.text).join('');
}
