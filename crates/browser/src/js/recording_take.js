// Hands the events collected so far to Rust (and forgets them); with
// `stop`, also ends the recorder on this document.
((stop) => {
  const w = window;
  const recording = typeof w.__ohRecStop === 'function';
  if (stop && recording) {
    try { w.__ohRecStop(); } catch (e) { /* the page may have broken it */ }
    w.__ohRecStop = null;
  }
  const events = Array.isArray(w.__ohRecEvents) ? w.__ohRecEvents : [];
  w.__ohRecEvents = [];
  return { recording, events };
})
