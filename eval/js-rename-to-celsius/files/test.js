const assert = require("assert");
const { toCelsius, toFahrenheit } = require("./units");
const { dailySummary, isFreezing } = require("./weather");

assert.strictEqual(toCelsius(212), 100);
assert.strictEqual(toFahrenheit(100), 212);
assert.strictEqual(isFreezing(32), true);
assert.strictEqual(isFreezing(33), false);
assert.deepStrictEqual(dailySummary([50, 59, 68]), { min: 10, max: 20, avg: 15 });
console.log("ok");
