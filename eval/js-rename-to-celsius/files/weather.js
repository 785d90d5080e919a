const { toCelsius, round1 } = require("./units");

// Readings from the US station arrive in Fahrenheit.
function dailySummary(readingsF) {
  const temps = readingsF.map((f) => round1(toCelsius(f)));
  const min = Math.min(...temps);
  const max = Math.max(...temps);
  const avg = round1(temps.reduce((a, b) => a + b, 0) / temps.length);
  return { min, max, avg };
}

function isFreezing(readingF) {
  return toCelsius(readingF) <= 0;
}

module.exports = { dailySummary, isFreezing };
