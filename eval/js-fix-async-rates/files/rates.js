const fs = require("fs/promises");
const path = require("path");

let cache = null;

async function loadRates() {
  if (!cache) {
    const text = await fs.readFile(path.join(__dirname, "rates.json"), "utf8");
    cache = JSON.parse(text).rates;
  }
  return cache;
}

async function getRate(currency) {
  const rates = loadRates();
  return rates[currency.toUpperCase()];
}

module.exports = { loadRates, getRate };
