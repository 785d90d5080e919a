const { getRate } = require("./rates");

async function main() {
  const [amountArg, ...currencies] = process.argv.slice(2);
  const amount = Number(amountArg);
  if (!Number.isFinite(amount) || currencies.length === 0) {
    console.error("usage: node main.js AMOUNT_USD CURRENCY...");
    process.exit(2);
  }
  console.log(`Converting ${amount.toFixed(2)} USD`);
  for (const c of currencies) {
    const rate = await getRate(c);
    if (rate === undefined) {
      console.log(`${c}: no rate`);
      continue;
    }
    console.log(`${c}: ${(amount * rate).toFixed(2)} (rate ${rate})`);
  }
}

main();
