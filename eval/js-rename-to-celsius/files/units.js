function toCelsius(f) {
  return ((f - 32) * 5) / 9;
}

function toFahrenheit(c) {
  return (c * 9) / 5 + 32;
}

function round1(x) {
  return Math.round(x * 10) / 10;
}

module.exports = { toCelsius, toFahrenheit, round1 };
