// Copy buttons of the install section. The page works without this script: the URL is
// shown as text; the buttons are hidden until the script shows them.
(() => {
  const status = document.getElementById('copy-status');
  for (const button of document.querySelectorAll('button[data-copy]')) {
    button.hidden = false;
    button.addEventListener('click', async () => {
      const text = button.getAttribute('data-copy') || '';
      let ok = false;
      try {
        await navigator.clipboard.writeText(text);
        ok = true;
      } catch {
        ok = false;
      }
      const label = button.textContent;
      button.textContent = ok ? 'Copied' : 'Press Ctrl+C';
      if (status) status.textContent = ok ? 'Update site URL copied to the clipboard' : 'Copying failed; select the URL and copy it';
      if (!ok) {
        const field = button.parentElement?.querySelector('input, code');
        if (field instanceof HTMLInputElement) field.select();
        else if (field) window.getSelection()?.selectAllChildren(field);
      }
      setTimeout(() => {
        button.textContent = label;
      }, 2000);
    });
  }
})();
