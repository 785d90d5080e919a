'use strict';

// Words whose plural follows no rule.
const IRREGULAR = { person: 'people', child: 'children', mouse: 'mice', foot: 'feet' };

function capitalize(word) {
  return word ? word[0].toUpperCase() + word.slice(1) : word;
}

// See README.md for the rules.
function pluralize(word, count) {
  // TODO
  return word;
}

module.exports = { IRREGULAR, capitalize, pluralize };
