// Reads the lesson list from content/course.toml (slug per [[lesson]] table) and names
// the pages the harness visits. A tiny line-based reader is enough for this file's shape
// and keeps the harness free of a TOML dependency.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export function readCourse(repoRoot) {
  const text = readFileSync(join(repoRoot, 'content', 'course.toml'), 'utf8');
  const lessons = [];
  let finalExam = null;
  let inLesson = false;
  for (const raw of text.split('\n')) {
    const line = raw.replace(/#.*$/, '').trim();
    if (line === '') continue;
    if (line.startsWith('[')) {
      inLesson = line === '[[lesson]]';
      if (inLesson) lessons.push({});
      continue;
    }
    const match = line.match(/^([A-Za-z_]+)\s*=\s*"([^"]*)"$/);
    if (!match) continue;
    const [, key, value] = match;
    if (inLesson) lessons[lessons.length - 1][key] = value;
    else if (key === 'final_exam') finalExam = value;
  }
  const bad = lessons.filter((l) => !l.slug);
  if (lessons.length === 0 || bad.length) throw new Error('content/course.toml: could not read the [[lesson]] slugs');
  return { lessons, finalExam };
}

export const lessonPath = (slug) => `/lessons/${slug}`;
export const quizPath = (slug) => `/lessons/${slug}/quiz`;
export const FINAL_EXAM_PATH = '/final-exam';
