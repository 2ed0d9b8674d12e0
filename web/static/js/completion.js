// The completion page's "Print or save as PDF" button: shown only when a script can
// open the browser's print dialog (without JavaScript the page says to use the
// browser's own print command). The print stylesheet leaves the site's chrome out.

const button = document.querySelector('[data-print]');
if (button) {
  button.hidden = false;
  button.addEventListener('click', () => window.print());
}
