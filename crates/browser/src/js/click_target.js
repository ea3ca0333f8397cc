// Finds element data-oh-index=N, scrolls it into view and returns where to
// click it (or null when no such element exists).
((n) => {
  const el = document.querySelector(`[data-oh-index="${n}"]`);
  if (!el) return null;
  el.scrollIntoView({ block: 'center', inline: 'center' });
  const r = el.getBoundingClientRect();
  return {
    x: r.left + r.width / 2,
    y: r.top + r.height / 2,
    tag: el.tagName.toLowerCase(),
    href: el.tagName === 'A' && el.getAttribute('href') ? el.href : null,
  };
})
