const assert = require("assert");
const { Scoreboard } = require("./scoreboard");

const b = new Scoreboard();
assert.strictEqual(b.render(), "(no scores yet)");
b.add("zo", 3);
b.add("al", 3);
b.add("maximilian", 120);
assert.deepStrictEqual(b.leaders(2), [["maximilian", 120], ["al", 3]]);
assert.strictEqual(
  b.render(),
  [
    "#  Name        Score",
    "--------------------",
    "1  maximilian    120",
    "2  al              3",
    "3  zo              3",
  ].join("\n")
);
assert.throws(() => b.add("x", 1.5), TypeError);
console.log("all tests passed");
