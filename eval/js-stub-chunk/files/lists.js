// Small helpers for arrays used by the report pages.

function last(items) {
  return items[items.length - 1];
}

// Splits items into groups; see SPEC.md.
function chunk(items, size) {
  throw new Error('not implemented');
}

module.exports = { chunk, last };
