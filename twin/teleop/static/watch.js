// Watcher page: live telemetry (joints, owner modes, faults, engaged hands, clearance, camera).
"use strict";
(() => {
  const P = TeleopProtocol;
  const $ = (id) => document.getElementById(id);
  const state = { frames: 0, last: null, stamps: [], ws: null, session: P.newSession() };
  window.watchPage = state;
  state.video = TeleopVideo.attach($("video"), $("frame-age"), $("camera-select"), (camera) => {
    if (state.ws && state.ws.readyState === WebSocket.OPEN) state.ws.send(P.view(state.session, camera));
  });
  function connect() {
    const ws = new WebSocket(P.wsUrl());
    state.ws = ws;
    ws.onopen = () => { ws.send(P.hello(state.session, "watcher")); $("conn").textContent = "connected"; $("conn").className = "badge ok"; };
    ws.onclose = () => { $("conn").textContent = "disconnected"; $("conn").className = "badge bad"; setTimeout(connect, 1000); };
    ws.onmessage = (ev) => {
      const msg = JSON.parse(ev.data);
      if (msg.type === "telemetry") show(msg);
      else if (msg.type === "camera") state.video.onFrame(msg);
      else if (msg.type === "welcome" && msg.cameras && msg.cameras.length) {
        state.video.onWelcome(msg);
        ws.send(P.view(state.session, $("camera-select").value || msg.camera));
      }
    };
  }
  function show(t) {
    state.frames += 1;
    state.last = t;
    const now = performance.now();
    state.stamps.push(now);
    while (state.stamps.length && now - state.stamps[0] > 1000) state.stamps.shift();
    $("rate").textContent = `${state.stamps.length} Hz`;
    $("frames").textContent = state.frames;
    $("simtime").textContent = t.sim_time_s.toFixed(2);
    $("operator").textContent = t.teleop.operator ? "yes" : "no";
    $("clearance").textContent = P.clearanceText(t);
    $("camera-status").textContent = t.video ? t.video.status : "video off";
    $("notes").innerHTML = "";
    for (const line of t.notes || []) {
      const li = document.createElement("li"); li.textContent = line; $("notes").appendChild(li);
    }
    for (const arm of ["left", "right"]) {
      const a = t.arms[arm], h = t.teleop.hands[arm];
      $(arm + "-state").textContent = `owner ${a.mode}, generation ${a.generation}` +
        (a.fault ? `, FAULT ${a.fault}: ${a.fault_reason}` : "") + (h.engaged ? ", ENGAGED" : "") +
        (h.last_reject ? ` - ${h.last_reject}` : "");
      let rows = "<tr><th>joint</th><th>commanded [rad]</th><th>feedback [rad]</th></tr>";
      a.commanded_rad.forEach((q, j) => {
        const fb = a.feedback_rad ? a.feedback_rad[j].toFixed(3) : "-";
        rows += `<tr><td>j${j + 1}</td><td>${q.toFixed(3)}</td><td>${fb}</td></tr>`;
      });
      $(arm + "-joints").innerHTML = rows;
    }
    $("counts").textContent = JSON.stringify(t.teleop.counts, null, 1);
  }
  connect();
})();
