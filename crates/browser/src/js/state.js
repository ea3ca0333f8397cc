// Numbers the visible interactive elements of the page (attribute
// data-oh-index, 1-based, in document order) and describes the page.
(() => {
  const SELECTOR = [
    'a[href]', 'button', 'input:not([type=hidden])', 'select', 'textarea',
    'summary', 'details', 'label[for]', '[contenteditable=""]', '[contenteditable=true]',
    '[onclick]', '[tabindex]:not([tabindex="-1"])',
    '[role=button]', '[role=link]', '[role=checkbox]', '[role=radio]', '[role=tab]',
    '[role=menuitem]', '[role=option]', '[role=switch]', '[role=textbox]', '[role=combobox]',
  ].join(',');
  const visible = (el) => {
    const r = el.getBoundingClientRect();
    if (r.width <= 0 || r.height <= 0) return false;
    const s = getComputedStyle(el);
    return s.visibility !== 'hidden' && s.display !== 'none' && Number(s.opacity) !== 0;
  };
  for (const old of document.querySelectorAll('[data-oh-index]')) old.removeAttribute('data-oh-index');
  const elements = [];
  let n = 0;
  for (const el of document.querySelectorAll(SELECTOR)) {
    if (el.disabled || !visible(el)) continue;
    n += 1;
    el.setAttribute('data-oh-index', String(n));
    const text = (el.innerText || el.value || el.getAttribute('aria-label') || el.title || '')
      .replace(/\s+/g, ' ').trim().slice(0, 100);
    const info = { index: n, tag: el.tagName.toLowerCase(), text };
    const placeholder = el.getAttribute('placeholder');
    if (placeholder) info.placeholder = placeholder;
    const href = el.getAttribute('href');
    if (href) info.href = href;
    elements.push(info);
  }
  const doc = document.documentElement;
  return {
    url: location.href,
    title: document.title,
    interactive_elements: elements,
    viewport: { width: window.innerWidth, height: window.innerHeight },
    page: { width: doc.scrollWidth, height: doc.scrollHeight },
    scroll: { x: Math.round(window.scrollX), y: Math.round(window.scrollY) },
  };
})()
