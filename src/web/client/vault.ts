/**
 * The vault page with JavaScript: a box to choose every file listed, the
 * number chosen said as it changes, the two buttons usable only with a
 * choice, and a confirmation before deleting, in a dialog (without
 * JavaScript, the server's page asks instead; the dialog's yes is sent as
 * confirm=yes, so the page does not ask again).
 */
const form = document.getElementById('vault-files') as HTMLFormElement | null;
const count = document.getElementById('chosen-count');
const download = document.getElementById('download-chosen') as HTMLButtonElement | null;
const remove = document.getElementById('delete-chosen') as HTMLButtonElement | null;

if (form && count && download && remove) {
  const boxes = () => [...document.querySelectorAll<HTMLInputElement>('input[type="checkbox"][name="id"]')];
  const all = document.createElement('input');
  all.type = 'checkbox';
  all.id = 'choose-all';
  // Beside the buttons it serves, seen at every width (the table's head is hidden at phone width, where rows are cards).
  const label = document.createElement('label');
  label.className = 'choose-all';
  label.append(all, ' Choose every file listed');
  count.parentElement?.prepend(label);

  const update = () => {
    const chosen = boxes().filter((b) => b.checked).length;
    const total = boxes().length;
    count.textContent = chosen === 0 ? 'No file chosen' : `${chosen} of ${total} chosen`;
    all.checked = chosen > 0 && chosen === total;
    all.indeterminate = chosen > 0 && chosen < total;
    download.disabled = chosen === 0;
    remove.disabled = chosen === 0;
  };
  all.addEventListener('change', () => {
    for (const box of boxes()) box.checked = all.checked;
    update();
  });
  for (const box of boxes()) box.addEventListener('change', update);
  remove.addEventListener('click', (event) => {
    const chosen = boxes().filter((b) => b.checked).length;
    if (!window.confirm(`Delete ${chosen} marking${chosen === 1 ? '' : 's'} from the vault, the originals and the marked files? This cannot be undone.`)) event.preventDefault();
    else confirmed(form);
  });
  update();
}

// Turning the vault off with its files deleted is confirmed too.
const off = document.querySelector<HTMLFormElement>('form.vault-off');
off?.addEventListener('submit', (event) => {
  const removing = (off.querySelector<HTMLInputElement>('#files-delete')?.checked ?? false) === true;
  if (!removing) return;
  if (!window.confirm('Turn the vault off and delete every file it holds? This cannot be undone.')) event.preventDefault();
  else confirmed(off);
});

/** The dialog said yes: the form says so to the server, which otherwise asks on its page. */
function confirmed(target: HTMLFormElement): void {
  if (target.querySelector('input[name="confirm"]')) return;
  const yes = document.createElement('input');
  yes.type = 'hidden';
  yes.name = 'confirm';
  yes.value = 'yes';
  target.append(yes);
}
