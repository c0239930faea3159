/**
 * A scan's fix confirmation: once the form is sent, its button is disabled
 * and says the files are being marked, so that a second click does not
 * mark them (and spend the month's protections) twice. It comes back after
 * a while, since a zip download leaves the page where it is.
 */
const form = document.querySelector<HTMLFormElement>('form.fix-form');
const button = form?.querySelector<HTMLButtonElement>('button[type="submit"]');
const status = document.getElementById('fix-status');
const AGAIN_MS = 30_000;

if (form && button) {
  const label = button.textContent ?? '';
  form.addEventListener('submit', (event) => {
    if (button.disabled) {
      event.preventDefault();
      return;
    }
    // Disabled after this turn: a button disabled before the form is sent would leave its name out.
    setTimeout(() => {
      button.disabled = true;
      button.textContent = 'Marking…';
      if (status) status.textContent = 'Marking the images: the zip downloads, or the branch is pushed, when they are ready. This takes a moment for many images.';
    }, 0);
    setTimeout(() => {
      button.disabled = false;
      button.textContent = label;
      if (status) status.textContent = '';
    }, AGAIN_MS);
  });
}
