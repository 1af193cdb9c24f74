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
  view(session, camera) {
    return JSON.stringify({ v: 1, type: "view", session, camera });
  },
  clearanceText(t) {  // the nearest arm-arm / arm-body / arm-world pair, in words
    if (t.clearance_m === null) return `> ${(t.clearance_horizon_m * 100).toFixed(0)} cm to anything an arm could hit`;
    if (t.clearance_text) return t.clearance_text;  // the server's words (limiting only when near)
    return `${(t.clearance_m * 1000).toFixed(1)} mm, ${t.clearance_class}: ${t.clearance_pair}`;
  },
  reset(session, arm) {
    return JSON.stringify({ v: 1, type: "reset", session, arm });
  },
};
