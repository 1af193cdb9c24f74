// Watcher page: live telemetry (joints, owner modes, faults, engaged hands, clearance, camera).
"use strict";
(() => {
  const P = TeleopProtocol;
  const $ = (id) => document.getElementById(id);
  const state = { frames: 0, last: null, stamps: [], camera: 0 };
  window.watchPage = state;
  function connect() {
    const ws = new WebSocket(P.wsUrl());
    ws.onopen = () => { ws.send(P.hello(P.newSession(), "watcher")); $("conn").textContent = "connected"; $("conn").className = "badge ok"; };
    ws.onclose = () => { $("conn").textContent = "disconnected"; $("conn").className = "badge bad"; setTimeout(connect, 1000); };
    ws.onmessage = (ev) => {
      const msg = JSON.parse(ev.data);
      if (msg.type === "telemetry") show(msg);
      else if (msg.type === "camera") { $("camera").src = "data:image/jpeg;base64," + msg.jpeg_base64; state.camera += 1; }
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
    $("clearance").textContent = t.clearance_m === null ? `> ${(t.clearance_horizon_m * 100).toFixed(0)} cm`
      : `${(t.clearance_m * 1000).toFixed(1)} mm (${t.clearance_pair})`;
    $("camera-status").textContent = t.camera || "";
    $("camera").style.display = state.camera ? "block" : "none";  // no frame yet or camera off
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
    $("counts").textContent = JSON.stringify(t.teleop.counts);
  }
  connect();
})();
