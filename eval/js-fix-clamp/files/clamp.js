function clamp(x, lo, hi) {
  if (x < lo) return lo;
  if (x > hi) return lo;
  return x;
}

function inRange(x, lo, hi) {
  return x >= lo && x <= hi;
}

module.exports = { clamp, inRange };
