function repeat(s, n) {
  let out = "";
  for (let i = 0; i < n; i++) out += s;
  return out;
}

function isBlank(s) {
  return s.trim().length === 0;
}

module.exports = { repeat, isBlank };
