const assert = require("assert");
const { clamp, inRange } = require("./clamp");

assert.strictEqual(clamp(5, 0, 10), 5);
assert.strictEqual(clamp(-3, 0, 10), 0);
assert.strictEqual(clamp(42, 0, 10), 10);
assert.strictEqual(inRange(3, 0, 10), true);
console.log("all tests passed");
