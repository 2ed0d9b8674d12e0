// Small DOM helpers shared by the lesson widgets: building elements without innerHTML
// (the site's CSP and its escaping rules forbid markup from strings) and reading the
// reader's motion preference.

/** A `tag` element with an optional class and text content. */
export function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

/** True when the reader asked for reduced motion: widgets jump to the end state. */
export const reducedMotion = () => window.matchMedia('(prefers-reduced-motion: reduce)').matches;
