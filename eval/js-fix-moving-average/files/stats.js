// Helpers for the greenhouse sensor log.

function movingAverage(values, size) {
  const out = [];
  for (let start = 0; start + size < values.length; start++) {
    let sum = 0;
    for (let j = start; j < start + size; j++) sum += values[j];
    out.push(sum / size);
  }
  return out;
}

function countAbove(values, limit) {
  return values.filter((v) => v > limit).length;
}

function biggestJump(values) {
  let best = 0;
  for (let i = 1; i < values.length; i++) {
    best = Math.max(best, Math.abs(values[i] - values[i - 1]));
  }
  return best;
}

module.exports = { movingAverage, countAbove, biggestJump };
