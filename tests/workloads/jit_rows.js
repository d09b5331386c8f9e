// jit_rows.js — a Node.js service for tests/e2e/t_jit.sh. "hot": its CPU goes to one named JS
// function, checksumRows(), called in a loop over an array of rows (V8 optimizes it within a few
// hundred milliseconds; the test runs node with --no-turbo-inlining, so that the loop around it,
// optimized too, does not take it in). "idle": a timer that wakes every 100 ms and does nothing
// (the control).
'use strict';

function checksumRows(rows) {
  let h = 0x811c9dc5;
  for (let i = 0; i < rows.length; i++) {
    h = Math.imul(h ^ rows[i], 16777619) >>> 0;
  }
  return h;
}

const rows = new Int32Array(1 << 16).map((_, i) => i * 7);
if (process.argv[2] === 'idle') {
  setInterval(() => {}, 100);
} else {
  let sum = 0;
  for (;;) sum = (sum + checksumRows(rows)) >>> 0;
}
