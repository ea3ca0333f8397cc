// Loads rrweb into the page from a script URL (filled in by Rust as a JSON
// string) and answers 'ready', 'load_failed' or 'timeout'. Loading happens
// once per document; a failed load may be tried again.
(() => {
  const w = window;
  const url = __RRWEB_URL__;
  const waitMs = __WAIT_MS__;
  if (w.rrweb && typeof w.rrweb.record === 'function') return 'ready';
  if (!w.__ohRrwebLoading) {
    w.__ohRrwebLoading = new Promise((resolve) => {
      const failed = () => { w.__ohRrwebLoading = null; resolve('load_failed'); };
      const add = () => {
        const tag = document.createElement('script');
        tag.src = url;
        tag.async = true;
        tag.onload = () => {
          if (w.rrweb && typeof w.rrweb.record === 'function') resolve('ready'); else failed();
        };
        tag.onerror = failed;
        (document.head || document.documentElement || document.body).appendChild(tag);
      };
      if (document.documentElement) add();
      else document.addEventListener('DOMContentLoaded', add, { once: true });
    });
  }
  const late = new Promise((resolve) => setTimeout(() => resolve('timeout'), waitMs));
  return Promise.race([w.__ohRrwebLoading, late]);
})()
