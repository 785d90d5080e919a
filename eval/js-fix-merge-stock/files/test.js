const assert = require("assert");
const { mergeStock, lowItems, totalUnits } = require("./stock");

const shelf = { bolts: 10, nuts: 4 };
const delivery = { nuts: 6, washers: 20 };

const after = mergeStock(shelf, delivery);
assert.deepStrictEqual(after, { bolts: 10, nuts: 10, washers: 20 });

// The shelf snapshot is still used for the "before" column of the report.
assert.deepStrictEqual(shelf, { bolts: 10, nuts: 4 });
assert.deepStrictEqual(lowItems(shelf), ["nuts"]);
assert.deepStrictEqual(lowItems(after), []);
assert.strictEqual(totalUnits(shelf), 14);
assert.strictEqual(totalUnits(after), 40);

console.log("stock tests passed");
