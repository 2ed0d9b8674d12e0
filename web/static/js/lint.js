// The "Check your script" page: after a check, a button saves the findings as a text
// file on the learner's own machine (the server keeps neither the script nor the
// report), in the `file:line:col: CODE message` shape of `gpulab lint`.

const save = document.querySelector('[data-lint-save]');
const findings = [...document.querySelectorAll('.lint-finding')];

/** The report as `gpulab lint` prints it. */
function reportText() {
  return findings
    .map((f) => `train.py:${f.dataset.line}:${f.dataset.column}: ${f.dataset.code} ${f.dataset.message}\n`)
    .join('');
}

if (save && findings.length) {
  save.hidden = false;
  save.addEventListener('click', () => {
    const url = URL.createObjectURL(new Blob([reportText()], { type: 'text/plain' }));
    const link = document.createElement('a');
    link.href = url;
    link.download = 'gpulab-lint-report.txt';
    document.body.append(link);
    link.click();
    link.remove();
    URL.revokeObjectURL(url);
  });
}
