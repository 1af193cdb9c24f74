// The teleop wire protocol on the page side (twin/teleop/messages.py is the reference).
"use strict";
const TeleopProtocol = {
  VERSION: 1,
  wsUrl() {
    const scheme = location.protocol === "https:" ? "wss:" : "ws:";
    return `${scheme}//${location.host}/ws`;
  },
  newSession() {
    const a = new Uint32Array(2);
    crypto.getRandomValues(a);
    return "s-" + a[0].toString(16) + a[1].toString(16);
  },
  hello(session, role) {
    return JSON.stringify({ v: 1, type: "hello", session, role });
  },
  input(session, seq, hands) {
    return JSON.stringify({ v: 1, type: "input", session, seq, t_ms: performance.now(), hands });
  },
  reset(session, arm) {
    return JSON.stringify({ v: 1, type: "reset", session, arm });
  },
};
