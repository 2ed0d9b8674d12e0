// "Continue where you left off", this browser's half: each lesson page notes its slug
// in localStorage, and the home page (home.js) offers that lesson when it lies further
// on than the place the server worked out from quiz attempts. Nothing leaves the
// browser; storage that is switched off just means the server's suggestion stands.

const KEY = 'gpulab.last-lesson';

/** Remembers the lesson shown on this page, if it is one. */
export function rememberLesson(doc = document) {
  const match = /^\/lessons\/([a-z0-9-]+)\/?$/.exec(window.location.pathname);
  if (!match || !doc.querySelector('article.lesson')) return;
  try {
    localStorage.setItem(KEY, JSON.stringify({ slug: match[1], at: Date.now() }));
  } catch {
    // Storage switched off: nothing to remember.
  }
}

/** The last lesson opened in this browser: {slug, at}, or null. */
export function lastLesson() {
  try {
    const value = JSON.parse(localStorage.getItem(KEY) || 'null');
    return value && typeof value.slug === 'string' ? value : null;
  } catch {
    return null;
  }
}
