// Lesson enhancement: every directive placeholder the server rendered
// (<figure class="directive" data-widget|data-experiment="name" data-params="json">)
// is handed to its ES module, `widgets/<name>.js` or `experiments/<name>.js`, whose
// `mount(figure, params)` builds the interactive version. Without JavaScript, or if a
// module fails, the figure keeps the server-rendered fallback, so the lesson still reads.
// The page's reading aids come from here too: a copy button on each code block, a
// note under tables that scroll sideways, and this browser's memory of the last lesson
// opened (the home page's "Continue where you left off" prefers it).

// The instructor's class round, shown at the top of the page while one is open.
import './class-round.js';
import { addCopyButtons } from './code-copy.js';
import { rememberLesson } from './reading-place.js';
import { watchAllScrollers } from './scroll-hint.js';

const figures = document.querySelectorAll(
  'figure.directive[data-widget], figure.directive[data-experiment]',
);

async function enhance(figure) {
  const isWidget = figure.hasAttribute('data-widget');
  const name = isWidget ? figure.dataset.widget : figure.dataset.experiment;
  if (!/^[a-z0-9-]+$/.test(name)) return;
  let params = {};
  try {
    params = JSON.parse(figure.dataset.params || '{}');
  } catch {
    params = {};
  }
  const module = await import(`./${isWidget ? 'widgets' : 'experiments'}/${name}.js`);
  await module.mount(figure, params);
  figure.classList.add('enhanced');
  figure.dataset.ready = 'true';
}

for (const figure of figures) {
  enhance(figure).catch((error) => {
    // Keep the fallback; say why the interactive version is missing.
    figure.dataset.ready = 'failed';
    const note = document.createElement('p');
    note.className = 'enhance-failed';
    note.textContent = `The interactive version could not load (${error.message}); the summary above still applies.`;
    figure.append(note);
  });
}

addCopyButtons(document.querySelector('main') || document);
watchAllScrollers(document);
rememberLesson(document);
