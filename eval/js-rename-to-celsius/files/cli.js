const units = require("./units");
const { dailySummary } = require("./weather");

const args = process.argv.slice(2).map(Number);
if (args.length === 0 || args.some(Number.isNaN)) {
  console.error("usage: node cli.js TEMP_F [TEMP_F...]");
  process.exit(1);
}

for (const f of args) {
  console.log(`${f}F is ${units.round1(units.toCelsius(f))}C`);
}
const s = dailySummary(args);
console.log(`Converted to Celsius: min ${s.min}, max ${s.max}, avg ${s.avg}`);
