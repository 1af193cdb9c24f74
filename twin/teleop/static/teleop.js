// Operator page: a desktop gizmo and WebXR immersive-ar, both sending the same input frames.
"use strict";
(() => {
  const P = TeleopProtocol;
  const SPEED_M_S = 0.10;       // keyboard motion of the virtual controller
  const SEND_PERIOD_MS = 11;    // ~90 Hz, like a headset's frame rate
  const state = {
    session: P.newSession(), seq: 0, ws: null, role: "-", connected: false, inXR: false,
    selected: "right", keys: new Set(), telemetry: null, sent: 0, lastError: "",
    hands: {
      left: { position: [-0.2, 1.2, -0.3], orientation: [0, 0, 0, 1], grip: 0, trigger: 0, tracked: true },
      right: { position: [0.2, 1.2, -0.3], orientation: [0, 0, 0, 1], grip: 0, trigger: 0, tracked: true },
    },
  };
  window.teleopPage = state;
  const $ = (id) => document.getElementById(id);
  state.video = TeleopVideo.attach($("video"), $("frame-age"), $("camera-select"), (camera) => {
    if (state.ws && state.ws.readyState === WebSocket.OPEN) state.ws.send(P.view(state.session, camera));
  });

  // ------------------------------------------------------------------ connection
  function connect() {
    const ws = new WebSocket(P.wsUrl());
    state.ws = ws;
    ws.onopen = () => { state.connected = true; ws.send(P.hello(state.session, "operator")); render(); };
    ws.onclose = () => { state.connected = false; state.role = "-"; render(); setTimeout(connect, 1000); };
    ws.onmessage = (ev) => {
      const msg = JSON.parse(ev.data);
      if (msg.type === "camera") { state.video.onFrame(msg); return; }  // no re-render per frame
      if (msg.type === "welcome") {
        state.role = msg.role;
        if (msg.role === "operator") state.lastError = "";  // a lapse's note is over
        if (msg.cameras && msg.cameras.length) {  // ask for the video of the chosen camera
          state.video.onWelcome(msg);
          ws.send(P.view(state.session, $("camera-select").value || msg.camera));
        }
      }
      else if (msg.type === "role") {  // the server's lease changed this page's role
        state.role = msg.role;
        if (msg.reason) state.lastError = msg.reason;
        if (msg.role !== "operator") ws.send(P.hello(state.session, "operator"));  // ask again
      }
      else if (msg.type === "telemetry") state.telemetry = msg;
      else if (msg.type === "error" || msg.type === "refused") state.lastError = msg.reason;
      else if (msg.type === "reset" && !msg.ok) state.lastError = msg.reason;
      render();
    };
  }

  function send(hands) {
    const ws = state.ws;
    if (!ws || ws.readyState !== WebSocket.OPEN) return;
    if (state.role !== "operator") {  // a watcher asks again: the lease may have lapsed
      if (state.seq % 50 === 0) ws.send(P.hello(state.session, "operator"));
      state.seq += 1;
      return;
    }
    state.seq += 1;
    ws.send(P.input(state.session, state.seq, hands));
    state.sent += 1;
  }

  // ------------------------------------------------------------------ desktop mode
  function desktopTick(dtS) {
    const h = state.hands[state.selected];
    const d = SPEED_M_S * dtS;
    const k = state.keys;
    // XR frame: +x right, +y up, -z forward
    if (k.has("w")) h.position[2] -= d;
    if (k.has("s")) h.position[2] += d;
    if (k.has("a")) h.position[0] -= d;
    if (k.has("d")) h.position[0] += d;
    if (k.has("r")) h.position[1] += d;
    if (k.has("f")) h.position[1] -= d;
    const hands = {};
    for (const name of ["left", "right"]) {
      const s = state.hands[name];
      hands[name] = { tracked: s.tracked, position: s.position.slice(), orientation: s.orientation.slice(),
                      grip: s.grip, trigger: s.trigger };
    }
    send(hands);
  }
  let last = performance.now();
  setInterval(() => {
    const now = performance.now();
    if (!state.inXR) desktopTick((now - last) / 1000);
    last = now;
    drawPad();
  }, SEND_PERIOD_MS);

  function setGrip(on) { state.hands[state.selected].grip = on ? 1 : 0; render(); }
  function setTrigger(on) { state.hands[state.selected].trigger = on ? 1 : 0; render(); }
  function select(hand) {
    state.hands[state.selected].grip = 0;  // switching hands lets go of the old one
    state.selected = hand;
    $("hand-" + hand).checked = true;
    render();
  }
  document.addEventListener("keydown", (e) => {
    const key = e.key.toLowerCase();
    if (key === " ") { setGrip(true); e.preventDefault(); return; }
    if (key === "t") { setTrigger(true); return; }
    if (key === "1") { select("left"); return; }
    if (key === "2") { select("right"); return; }
    state.keys.add(key);
  });
  document.addEventListener("keyup", (e) => {
    const key = e.key.toLowerCase();
    if (key === " ") { setGrip(false); return; }
    if (key === "t") { setTrigger(false); return; }
    state.keys.delete(key);
  });
  window.addEventListener("blur", () => { state.keys.clear(); setGrip(false); setTrigger(false); });
  for (const hand of ["left", "right"]) $("hand-" + hand).addEventListener("change", () => select(hand));
  for (const [id, fn] of [["grip", setGrip], ["trigger", setTrigger]]) {
    const b = $(id);
    b.addEventListener("mousedown", () => fn(true));
    b.addEventListener("mouseup", () => fn(false));
    b.addEventListener("mouseleave", () => fn(false));
  }
  for (const arm of ["left", "right"]) {
    $("reset-" + arm).addEventListener("click", () => {
      if (state.ws && state.ws.readyState === WebSocket.OPEN) state.ws.send(P.reset(state.session, arm));
    });
  }

  // the pad: top view of the selected hand, 1 px = 1 mm, forward is up
  const pad = $("pad");
  const ctx = pad.getContext("2d");
  let drag = null;
  pad.addEventListener("mousedown", (e) => { drag = [e.offsetX, e.offsetY]; });
  window.addEventListener("mouseup", () => { drag = null; });
  pad.addEventListener("mousemove", (e) => {
    if (!drag) return;
    const h = state.hands[state.selected];
    h.position[0] += (e.offsetX - drag[0]) / 1000;
    h.position[2] += (e.offsetY - drag[1]) / 1000;
    drag = [e.offsetX, e.offsetY];
  });
  function drawPad() {
    ctx.clearRect(0, 0, pad.width, pad.height);
    ctx.strokeStyle = "#dde"; ctx.beginPath();
    for (let i = 0; i <= pad.width; i += 40) { ctx.moveTo(i, 0); ctx.lineTo(i, pad.height); ctx.moveTo(0, i); ctx.lineTo(pad.width, i); }
    ctx.stroke();
    for (const name of ["left", "right"]) {
      const h = state.hands[name];
      const x = pad.width / 2 + h.position[0] * 400;
      const y = pad.height / 2 + (h.position[2] + 0.3) * 400;
      const engaged = state.telemetry && state.telemetry.teleop.hands[name].engaged;
      ctx.fillStyle = engaged ? "#2a7" : (h.grip ? "#e90" : "#889");
      ctx.beginPath(); ctx.arc(x, y, name === state.selected ? 12 : 8, 0, 2 * Math.PI); ctx.fill();
      // the label follows the arm's hand: its TCP height from telemetry (FK of the commanded joints)
      const tcp = state.telemetry && state.telemetry.arms[name].tcp_m;
      ctx.fillStyle = "#223";
      ctx.fillText(tcp ? `${name} z ${tcp[2].toFixed(2)} m` : name, x + 14, y + 4);
    }
  }
  const fmt = (v) => v.map((x) => x.toFixed(3)).join(", ");
  function tcpLabel(name, t) {
    const tcp = t.arms[name].tcp_m, target = t.teleop.hands[name].target_tcp_m;
    let text = `${name} TCP (${fmt(tcp)}) m`;
    if (target) {
      const d = Math.hypot(target[0] - tcp[0], target[1] - tcp[1], target[2] - tcp[2]);
      text += `, target (${fmt(target)}) m, ${(d * 1000).toFixed(0)} mm ahead`;
    }
    return text;
  }

  // ------------------------------------------------------------------ status
  function render() {
    $("conn").textContent = state.connected ? "connected" : "disconnected";
    $("conn").className = "badge " + (state.connected ? "ok" : "bad");
    $("role").textContent = state.role;
    $("role").className = "badge " + (state.role === "operator" ? "ok" : "");
    const t = state.telemetry;
    for (const arm of ["left", "right"]) {
      const s = state.hands[arm];
      $(arm + "-input").textContent = `${s.grip.toFixed(1)} / ${s.trigger.toFixed(1)}`;
      if (!t) continue;
      const h = t.teleop.hands[arm];
      const cell = $(arm + "-engaged");
      cell.textContent = h.engaged ? "ENGAGED" : "no";
      cell.className = h.engaged ? "on" : "";
      $(arm + "-mode").textContent = t.arms[arm].mode + (t.arms[arm].fault ? ` (${t.arms[arm].fault})` : "");
      $(arm + "-gen").textContent = t.arms[arm].generation;
      const why = h.last_reject || h.reason;
      $("reject-" + arm).textContent = why ? `${arm}: ${why}` : "";
    }
    if (t) {
      $("clearance").textContent = TeleopProtocol.clearanceText(t);
      $("video-status").textContent = t.video ? `Video: ${t.video.status}` : "Video: off";
      for (const arm of ["left", "right"]) $("pad-label-" + arm).textContent = tcpLabel(arm, t);
      $("notes").innerHTML = "";
      for (const line of t.notes || []) {
        const li = document.createElement("li"); li.textContent = line; $("notes").appendChild(li);
      }
      $("counts").textContent = JSON.stringify(t.teleop.counts, null, 1) + (state.lastError ? "\nlast error: " + state.lastError : "");
    }
  }

  // ------------------------------------------------------------------ WebXR (immersive-ar, else -vr)
  async function offerXR() {
    if (!navigator.xr || !navigator.xr.isSessionSupported) return;
    for (const mode of ["immersive-ar", "immersive-vr"]) {
      let ok = false;
      try { ok = await navigator.xr.isSessionSupported(mode); } catch (e) { ok = false; }
      if (!ok) continue;
      const button = $("enter-ar");
      button.textContent = mode === "immersive-ar" ? "Enter AR" : "Enter VR";
      button.hidden = false;
      button.addEventListener("click", () => startXR(mode));  // a user gesture, as WebXR requires
      return;
    }
  }

  async function startXR(mode) {
    const session = await navigator.xr.requestSession(mode, { optionalFeatures: ["local-floor"] });
    state.xr = { mode, frames: 0, ended: false };
    const canvas = document.createElement("canvas");
    const gl = canvas.getContext("webgl", { xrCompatible: true, alpha: true });
    await session.updateRenderState({ baseLayer: new XRWebGLLayer(session, gl) });
    let space;
    try { space = await session.requestReferenceSpace("local-floor"); }
    catch (e) { space = await session.requestReferenceSpace("local"); }
    let resetPending = false;
    space.addEventListener("reset", () => { resetPending = true; });  // origin jumped: disengage
    state.inXR = true;
    session.addEventListener("end", () => {
      state.inXR = false; state.xr.ended = true;
      for (const h of Object.values(state.hands)) { h.grip = 0; h.trigger = 0; }  // let go
    });
    const onFrame = (time, frame) => {
      session.requestAnimationFrame(onFrame);
      state.xr.frames += 1;
      const layer = session.renderState.baseLayer;
      gl.bindFramebuffer(gl.FRAMEBUFFER, layer.framebuffer);
      gl.clearColor(0, 0, 0, 0);  // transparent: passthrough stays visible
      gl.clear(gl.COLOR_BUFFER_BIT);
      const hands = {};
      for (const src of session.inputSources) {
        if (!src.gripSpace || (src.handedness !== "left" && src.handedness !== "right")) continue;
        const pose = frame.getPose(src.gripSpace, space);
        const buttons = src.gamepad ? src.gamepad.buttons : [];
        const tracked = !!pose && !pose.emulatedPosition && session.visibilityState === "visible" && !resetPending;
        const p = pose ? pose.transform.position : { x: 0, y: 0, z: 0 };
        const o = pose ? pose.transform.orientation : { x: 0, y: 0, z: 0, w: 1 };
        hands[src.handedness] = {
          tracked, position: [p.x, p.y, p.z], orientation: [o.x, o.y, o.z, o.w],
          grip: buttons[1] ? buttons[1].value : 0, trigger: buttons[0] ? buttons[0].value : 0,
        };
      }
      resetPending = false;
      if (Object.keys(hands).length) send(hands);
    };
    session.requestAnimationFrame(onFrame);
  }

  connect();
  offerXR();
  render();
})();
