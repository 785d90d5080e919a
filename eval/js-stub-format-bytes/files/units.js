'use strict';

const UNITS = ['B', 'KB', 'MB', 'GB', 'TB'];

// parseBytes('1.5 KB') -> 1536; the inverse of formatBytes for its own output.
function parseBytes(text) {
  const m = /^\s*(-?\d+(?:\.\d+)?)\s*([KMGT]?B)\s*$/.exec(text);
  if (!m) throw new TypeError(`not a size: ${text}`);
  return Math.round(parseFloat(m[1]) * 1024 ** UNITS.indexOf(m[2]));
}

function formatBytes(n) {
  // TODO: see docs/format-bytes.md
  throw new Error('not implemented');
}

module.exports = { UNITS, parseBytes, formatBytes };
