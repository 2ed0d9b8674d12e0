// The About page's "Bring your GPU's run home": upload the file `gpulab bench all --json`
// wrote on a GPU elsewhere (POST /api/me/gpu-runs, JSON as it is in the file), list this
// learner's runs (GET /api/me/gpu-runs) and remove one (DELETE …/{id}). The server checks
// each file and says what is wrong with it; that message is shown as it came. The panels
// (experiments/panel-reference.js) then show the runs as the learner's own.

import { el } from './dom.js';
import { isoDate } from './logic/reference-overlay.js';

const section = document.getElementById('your-gpu-runs');
const form = document.getElementById('gpu-run-upload');
const input = document.getElementById('gpu-run-file');
const status = document.getElementById('gpu-run-status');
const list = document.getElementById('gpu-run-list');

async function errorText(response) {
  try {
    const body = await response.json();
    return (body.error && body.error.message) || `the server answered ${response.status}`;
  } catch {
    return `the server answered ${response.status}`;
  }
}

async function refresh() {
  const response = await fetch('/api/me/gpu-runs', { headers: { Accept: 'application/json' } });
  if (!response.ok) {
    list.replaceChildren(el('li', {}, `Your runs cannot be read just now: ${await errorText(response)}`));
    return;
  }
  const runs = await response.json();
  if (!runs.length) {
    list.replaceChildren(el('li', { class: 'gpu-run-none' }, 'No run of yours yet.'));
    return;
  }
  list.replaceChildren(...runs.map((run) => {
    const r = run.file.recorded;
    const remove = el('button', { type: 'button', class: 'button-secondary' }, 'Remove');
    remove.addEventListener('click', async () => {
      const answer = await fetch(`/api/me/gpu-runs/${run.id}`, { method: 'DELETE' });
      status.textContent = answer.ok ? `Removed your run on ${r.device}.` : await errorText(answer);
      await refresh();
    });
    return el('li', { class: 'gpu-run', 'data-run-id': String(run.id) },
      el('strong', {}, `What your ${r.device} measured, ${isoDate(r.recorded_at_unix)}`),
      ` (driver ${r.driver_version}${r.cuda_version ? `, CUDA ${r.cuda_version}` : ''}, GPU Lab ${r.gpulab_version}; ${r.experiments.length} experiments) `,
      remove);
  }));
}

if (section && form && input && status && list) {
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const file = input.files && input.files[0];
    if (!file) {
      status.textContent = 'Choose the .json file `gpulab bench all --json` wrote first.';
      return;
    }
    status.textContent = `Checking ${file.name}…`;
    const answer = await fetch('/api/me/gpu-runs', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
      body: await file.arrayBuffer(),
    });
    if (answer.ok) {
      const run = await answer.json();
      status.textContent = `Imported: ${run.file.title}. The lessons' panels now show it beside your CPU runs.`;
      form.reset();
    } else {
      status.textContent = await errorText(answer);
    }
    await refresh();
  });
  section.hidden = false;
  refresh();
}
