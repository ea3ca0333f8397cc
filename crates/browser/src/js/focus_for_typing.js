// Focuses element data-oh-index=N and selects its current text so typing
// replaces it. Returns false when no such element exists.
((n) => {
  const el = document.querySelector(`[data-oh-index="${n}"]`);
  if (!el) return false;
  el.scrollIntoView({ block: 'center' });
  el.focus();
  if (typeof el.select === 'function') {
    el.select();
  } else if (el.isContentEditable) {
    const range = document.createRange();
    range.selectNodeContents(el);
    const sel = window.getSelection();
    sel.removeAllRanges();
    sel.addRange(range);
  }
  return true;
})
