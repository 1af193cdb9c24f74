// Live video of the twin on both pages: JPEG frames from the server's render process, drawn
// on a canvas. A frame that arrives while the previous one is still being decoded replaces
// the waiting one (latest-frame slot): a slow page drops frames, it never queues them.
// Glass-to-glass age = the moment the frame is painted (the animation frame after drawing,
// epoch ms) minus the moment the server copied the twin's state it shows (same clock on one
// machine; a remote page needs a synchronised clock).
"use strict";
const TeleopVideo = {
  attach(canvas, ageEl, select, sendView) {
    const ctx = canvas.getContext("2d");
    const v = {
      frames: 0, dropped: 0, lastSeq: -1, camera: null, ages: [],
      lastStateMs: null, busy: false, waiting: null,
    };
    const nowMs = () => performance.timeOrigin + performance.now();
    v.checksum = () => {  // a fingerprint of the picture on screen (tests ask for it)
      const d = ctx.getImageData(0, 0, canvas.width, canvas.height).data;
      let s = 0;
      for (let i = 0; i < d.length; i += 97) s = (s * 31 + d[i]) % 1000000007;
      return s;
    };
    function jpegBytes(b64) {
      const text = atob(b64);
      const bytes = new Uint8Array(text.length);
      for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
      return bytes;
    }
    async function draw(msg) {
      v.busy = true;
      try {
        const bytes = jpegBytes(msg.jpeg_base64);
        const bitmap = await createImageBitmap(new Blob([bytes], { type: "image/jpeg" }));
        if (canvas.width !== msg.width || canvas.height !== msg.height) {
          canvas.width = msg.width; canvas.height = msg.height;
        }
        ctx.drawImage(bitmap, 0, 0);
        bitmap.close();
        v.frames += 1; v.lastSeq = msg.seq; v.camera = msg.camera; v.lastStateMs = msg.state_stamp_ms;
        requestAnimationFrame(() => {  // painted by now: the glass-to-glass age
          v.ages.push(nowMs() - msg.state_stamp_ms);
          if (v.ages.length > 2000) v.ages.shift();
        });
      } finally {
        v.busy = false;
        if (v.waiting) { const next = v.waiting; v.waiting = null; draw(next); }
      }
    }
    v.onFrame = (msg) => {
      if (v.busy) { if (v.waiting) v.dropped += 1; v.waiting = msg; return; }
      draw(msg);
    };
    v.onWelcome = (msg) => {  // the camera list; a reconnect keeps the camera chosen before
      const keep = select.value;
      select.innerHTML = "";
      for (const name of msg.cameras || []) {
        const o = document.createElement("option");
        o.value = name; o.textContent = name; select.appendChild(o);
      }
      select.value = keep && (msg.cameras || []).includes(keep) ? keep : msg.camera;
      select.disabled = !(msg.cameras && msg.cameras.length);
    };
    select.addEventListener("change", () => sendView(select.value));
    setInterval(() => {  // the age of what is on screen, as it grows between frames
      ageEl.textContent = v.lastStateMs === null ? "no frame yet"
        : `frame age ${Math.max(0, nowMs() - v.lastStateMs).toFixed(0)} ms (${v.camera}, #${v.lastSeq})`;
    }, 100);
    return v;
  },
};
