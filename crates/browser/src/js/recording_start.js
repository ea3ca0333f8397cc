// Starts rrweb's recorder on this document unless it already runs; events
// collect in window.__ohRecEvents until Rust takes them.
(() => {
  const w = window;
  if (!w.rrweb || typeof w.rrweb.record !== 'function') return 'not_loaded';
  if (typeof w.__ohRecStop === 'function') return 'already_recording';
  w.__ohRecEvents = w.__ohRecEvents || [];
  const stop = w.rrweb.record({ emit: (event) => { w.__ohRecEvents.push(event); } });
  if (typeof stop !== 'function') return 'start_failed';
  w.__ohRecStop = stop;
  return 'started';
})()
