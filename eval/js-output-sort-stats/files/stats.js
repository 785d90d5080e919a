// Quick summary of today's sensor readings.
const readings = [12, 7, 105, 3, 48];

const sorted = readings.sort();
console.log(`sorted: ${sorted.join(" ")}`);
console.log(`median: ${sorted[Math.floor(sorted.length / 2)]}`);

const avg = readings.reduce((a, b) => a + b, 0) / readings.length;
console.log(`avg: ${avg.toFixed(1)}`);
