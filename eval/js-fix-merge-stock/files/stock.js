// Stock levels are plain objects: { sku: quantity }.

function mergeStock(current, delivery) {
  const merged = current;
  for (const [sku, qty] of Object.entries(delivery)) {
    merged[sku] = (merged[sku] || 0) + qty;
  }
  return merged;
}

function lowItems(stock, threshold = 5) {
  return Object.keys(stock)
    .filter((sku) => stock[sku] < threshold)
    .sort();
}

function totalUnits(stock) {
  return Object.values(stock).reduce((sum, qty) => sum + qty, 0);
}

module.exports = { mergeStock, lowItems, totalUnits };
