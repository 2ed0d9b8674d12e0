// A "Copy" button on every code block: the code goes to the clipboard (the Clipboard
// API where the page is a secure context, else a selection and the copy command, which
// also works on a class server reached over plain http), and the button says it did.

import { el } from './dom.js';

async function copyText(text) {
  if (navigator.clipboard && window.isSecureContext) {
    await navigator.clipboard.writeText(text);
    return;
  }
  const area = el('textarea', { class: 'copy-buffer', readonly: true, 'aria-hidden': 'true', tabindex: '-1' });
  area.value = text;
  document.body.append(area);
  area.select();
  const ok = document.execCommand('copy');
  area.remove();
  if (!ok) throw new Error('the browser refused to copy');
}

/** Adds a copy button to `pre` (a highlighted code block). */
export function addCopyButton(pre) {
  if (pre.parentElement && pre.parentElement.classList.contains('code-block')) return;
  const code = pre.querySelector('code') || pre;
  const label = el('span', {}, 'Copy');
  const button = el('button', { type: 'button', class: 'copy-code' }, label, el('span', { class: 'visually-hidden' }, ' code'));
  const said = el('span', { class: 'visually-hidden', role: 'status' });
  const wrapper = el('div', { class: 'code-block' });
  pre.before(wrapper);
  wrapper.append(button, pre, said);
  let reset = null;
  button.addEventListener('click', async () => {
    clearTimeout(reset);
    try {
      await copyText(code.textContent);
      label.textContent = 'Copied';
      said.textContent = 'Code copied to the clipboard.';
    } catch (error) {
      label.textContent = 'Copy failed';
      said.textContent = `Could not copy: ${error.message}. Select the code and copy it by hand.`;
    }
    reset = setTimeout(() => {
      label.textContent = 'Copy';
      said.textContent = '';
    }, 2500);
  });
}

/** Adds copy buttons to every code block inside `root`. */
export function addCopyButtons(root = document) {
  root.querySelectorAll('pre.code').forEach(addCopyButton);
}
