// Small DOM helpers shared by every widget and experiment panel: building elements
// without innerHTML (the site's CSP and its escaping rules forbid markup from strings),
// text whose `code spans` become <code>, and reading the reader's motion preference.

import { splitInlineCode } from './logic/inline-code.js';

function append(node, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(node, child);
    else node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/**
 * A `tag` element. `attrs` is either a class name (`el('p', 'note', 'text')`) or an
 * object of attributes (`el('p', {class: 'x', 'aria-live': 'polite'}, 'text', child)`;
 * `text` sets the text, `true` sets an empty attribute, null/undefined/false are
 * skipped). Children: strings become text nodes, nodes are appended, arrays are
 * flattened, null/undefined/false are skipped. Nothing is ever parsed as HTML.
 */
export function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  if (typeof attrs === 'string') {
    node.className = attrs;
  } else {
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === 'class') node.className = value;
      else if (key === 'text') node.textContent = value;
      else if (value === true) node.setAttribute(key, '');
      else node.setAttribute(key, String(value));
    }
  }
  append(node, children);
  return node;
}

/**
 * `text` as nodes to append: plain runs as text, `code spans` as <code> elements, so
 * a message such as "run `gpulab selftest`" never shows its backticks.
 */
export function richText(text) {
  return splitInlineCode(text).map((run) => (run.code ? el('code', {}, run.text) : document.createTextNode(run.text)));
}

/** True when the reader asked for reduced motion: widgets jump to the end state. */
export const reducedMotion = () => window.matchMedia('(prefers-reduced-motion: reduce)').matches;
