const { movingAverage, countAbove, biggestJump } = require("./stats");

// Hourly temperatures, 06:00 to 11:00.
const temps = [14, 16, 18, 21, 26, 25];

const smooth = movingAverage(temps, 3).map((t) => t.toFixed(1));
console.log(`readings: ${temps.length}`);
console.log(`smoothed (3h): ${smooth.join(" ")}`);
console.log(`hours above 20C: ${countAbove(temps, 20)}`);
console.log(`biggest jump: ${biggestJump(temps)}C`);
