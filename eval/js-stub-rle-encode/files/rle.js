'use strict';
// Run-length encoding for the level files of the tile editor.
// The encoded format is described in SPEC.md.

function encode(text) {
  // TODO
  throw new Error('not implemented');
}

function decode(encoded) {
  if (typeof encoded !== 'string') throw new TypeError('decode expects a string');
  let out = '';
  let count = '';
  for (const ch of encoded) {
    if (ch >= '0' && ch <= '9') {
      count += ch;
    } else {
      out += ch.repeat(count === '' ? 1 : Number(count));
      count = '';
    }
  }
  if (count !== '') throw new Error('count without a character at the end');
  return out;
}

// How much smaller the encoding is: 0.25 means a quarter of the length.
function ratio(text) {
  if (text.length === 0) return 1;
  return encode(text).length / text.length;
}

function encodeRows(rows) {
  return rows.map(encode).join('\n');
}

module.exports = { encode, decode, ratio, encodeRows };
