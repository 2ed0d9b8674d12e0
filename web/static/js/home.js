// Home page enhancement: "Continue where you left off" comes from the server, worked
// out from quiz attempts. When this browser opened a lesson further on than that (read
// ahead without taking the quizzes), the link leads there instead. Without JavaScript,
// or with storage switched off, the server's suggestion stands.

// The instructor's class round, shown at the top of the page while one is open.
import './class-round.js';
import { lastLesson } from './reading-place.js';

const box = document.querySelector('section.continue');
const last = lastLesson();
if (box && last) {
  const card = document.querySelector(`li.lesson-card[data-slug="${CSS.escape(last.slug)}"]`);
  const suggested = Number(box.dataset.lessonNumber) || 0;
  const number = card ? Number(card.dataset.number) : 0;
  // 0 means the server points at the exam or the completion page: keep that.
  if (card && suggested > 0 && number > suggested && card.dataset.passed !== 'true') {
    const link = box.querySelector('.continue-link');
    link.href = `/lessons/${last.slug}`;
    link.textContent = `Lesson ${number}: ${card.dataset.title} →`;
    box.querySelector('.continue-reason').textContent = 'The last lesson you opened in this browser.';
  }
}
