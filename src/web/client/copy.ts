/** Copy buttons: `data-copy="ID"` copies the value (or text) of element ID and says so. */
for (const button of document.querySelectorAll<HTMLButtonElement>('button[data-copy]')) {
  button.addEventListener('click', () => {
    const target = document.getElementById(button.dataset.copy ?? '');
    const text = target instanceof HTMLInputElement ? target.value : (target?.textContent ?? '');
    void navigator.clipboard.writeText(text).then(
      () => (button.textContent = 'Copied'),
      () => {
        if (target instanceof HTMLInputElement) target.select();
        button.textContent = 'Select and copy';
      },
    );
  });
}
