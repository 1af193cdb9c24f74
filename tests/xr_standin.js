// A scripted stand-in for the WebXR Device API, installed before the page loads
// (Playwright add_init_script): navigator.xr, an XRSession that plays a recorded-style
// controller trace (window.__XR_TRACE__) one animation frame per trace frame at the trace's
// rate, XRReferenceSpace, XRInputSource with xr-standard gamepad buttons, XRFrame.getPose,
// and an XRWebGLLayer. When the trace is over the session ends itself ("end" event).
// window.__xrStandin records what the page asked for, for the test to read.
"use strict";
(() => {
  const trace = window.__XR_TRACE__;
  const log = { supportedAsked: [], requested: null, options: null, spaces: [], frames: 0,
                 renderStateSet: false, ended: false, poseCalls: 0 };
  window.__xrStandin = log;
  class Space extends EventTarget {
    constructor(type) { super(); this.type = type; }
  }
  class Session extends EventTarget {
    constructor(mode) {
      super();
      this.mode = mode;
      this.visibilityState = "visible";
      this.renderState = { baseLayer: null };
      this._callbacks = new Map();
      this._nextId = 1;
      this._index = 0;
      this._ended = false;
      this.inputSources = ["right", "left"].map((hand) => ({
        handedness: hand, targetRayMode: "tracked-pointer", profiles: ["generic-trigger-squeeze"],
        gripSpace: new Space("grip-" + hand), targetRaySpace: new Space("ray-" + hand),
        gamepad: { mapping: "xr-standard", buttons: [{ value: 0, pressed: false }, { value: 0, pressed: false }] },
      }));
      this._timer = setInterval(() => this._tick(), 1000 / trace.frame_rate_hz);
    }
    async updateRenderState(state) { Object.assign(this.renderState, state); log.renderStateSet = true; }
    async requestReferenceSpace(type) { log.spaces.push(type); return new Space(type); }
    requestAnimationFrame(cb) { const id = this._nextId++; this._callbacks.set(id, cb); return id; }
    cancelAnimationFrame(id) { this._callbacks.delete(id); }
    async end() {
      if (this._ended) return;
      this._ended = true; log.ended = true;
      clearInterval(this._timer);
      this.dispatchEvent(new Event("end"));
    }
    _tick() {
      if (this._ended) return;
      if (this._index >= trace.frames.length) { this.end(); return; }
      const rec = trace.frames[this._index++];
      for (const src of this.inputSources) {  // buttons as the gamepad reports them this frame
        const c = rec.controllers[src.handedness];
        src.gamepad.buttons.forEach((b, i) => { b.value = c ? c.buttons[i] : 0; b.pressed = b.value > 0.5; });
      }
      const frame = {
        session: this,
        getPose: (space, base) => {
          log.poseCalls += 1;
          const hand = space.type.replace("grip-", "");
          const c = rec.controllers[hand];
          if (!c) return null;
          const [x, y, z] = c.position, [qx, qy, qz, qw] = c.orientation;
          return { emulatedPosition: false,
                   transform: { position: { x, y, z, w: 1 }, orientation: { x: qx, y: qy, z: qz, w: qw } } };
        },
      };
      const callbacks = [...this._callbacks.values()];
      this._callbacks.clear();
      log.frames += 1;
      for (const cb of callbacks) cb(performance.now(), frame);
    }
  }
  const xr = {
    async isSessionSupported(mode) { log.supportedAsked.push(mode); return mode === "immersive-ar" || mode === "immersive-vr"; },
    async requestSession(mode, options) {
      log.requested = mode; log.options = options || null;
      return new Session(mode);
    },
  };
  Object.defineProperty(Navigator.prototype, "xr", { get: () => xr, configurable: true });
  window.XRWebGLLayer = class { constructor(session, gl) { this.session = session; this.framebuffer = null; } };
})();
