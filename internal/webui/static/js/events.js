// The daemon's event stream as Server-Sent Events. One EventSource at a
// time; when it fails (the daemon stopped, restarted, or this reader fell
// behind and the stream ended) it is closed and reopened with
// ?after=<last event seq>, so the daemon replays every event that was
// missed. Each reopening after a loss fires "resync": views then re-read
// what they show, which covers anything the replay cannot (a daemon whose
// store was replaced, a room change published while nobody listened).

const MIN_DELAY = 500;
const MAX_DELAY = 5000;

export class EventFeed extends EventTarget {
  constructor() {
    super();
    this.last = null; // seq of the last event seen
    this.state = 'connecting';
    this.source = null;
    this.delay = MIN_DELAY;
    this.timer = 0;
    this.opened = false; // an earlier connection was open
    this.lost = false; // the stream was lost since it was last open
  }

  start() {
    if (!this.source && !this.timer) this.connect();
  }

  stop() {
    clearTimeout(this.timer);
    this.timer = 0;
    if (this.source) this.source.close();
    this.source = null;
  }

  connect() {
    this.timer = 0;
    const url = this.last == null ? '/v1/events?format=sse' : `/v1/events?format=sse&after=${this.last}`;
    const es = new EventSource(url);
    this.source = es;
    es.onopen = () => {
      this.delay = MIN_DELAY;
      this.setState('live');
      if (this.opened && this.lost) this.dispatchEvent(new CustomEvent('resync', { detail: { reason: 'reconnected' } }));
      this.opened = true;
      this.lost = false;
    };
    es.onmessage = (m) => {
      let ev;
      try {
        ev = JSON.parse(m.data);
      } catch {
        return;
      }
      if (typeof ev.seq === 'number') this.last = ev.seq;
      this.handle(ev);
    };
    es.onerror = () => {
      // EventSource would retry by itself, but only for some failures and
      // with Last-Event-ID; reconnecting by hand treats every failure the
      // same way and keeps the position in the URL.
      es.close();
      if (this.source !== es) return;
      this.source = null;
      this.lost = true;
      this.setState('reconnecting');
      this.dispatchEvent(new CustomEvent('lost'));
      this.timer = setTimeout(() => this.connect(), this.delay);
      this.delay = Math.min(this.delay * 2, MAX_DELAY);
    };
  }

  handle(ev) {
    if (ev.kind === 'reset') {
      const data = ev.data || {};
      if (data.snapshots) this.dispatchEvent(new CustomEvent('snapshot', { detail: data.snapshots }));
      // A position the daemon never handed out: everything may differ.
      if (data.reason === 'unknown_position') this.dispatchEvent(new CustomEvent('resync', { detail: { reason: 'unknown_position' } }));
      return;
    }
    if (ev.kind === 'stream_resync') return; // the stream ends; onerror resumes after ev.seq
    this.dispatchEvent(new CustomEvent('event', { detail: ev }));
  }

  setState(s) {
    if (this.state === s) return;
    this.state = s;
    this.dispatchEvent(new CustomEvent('state', { detail: s }));
  }

  // on subscribes fn to one type ("event", "resync", "state", "snapshot",
  // "lost") and returns the function that unsubscribes it.
  on(type, fn) {
    const l = (e) => fn(e.detail);
    this.addEventListener(type, l);
    return () => this.removeEventListener(type, l);
  }
}

export const feed = new EventFeed();
