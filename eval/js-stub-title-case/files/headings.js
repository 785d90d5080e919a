'use strict';
// Heading helpers for the static site generator.

const SMALL_WORDS = ['a', 'an', 'and', 'as', 'at', 'but', 'by', 'for', 'in', 'of', 'on', 'or', 'the', 'to'];

function anchor(heading) {
  return heading.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '');
}

function titleCase(text) {
  // TODO: implement (docs/title-case.md)
  return text;
}

function tocEntry(heading, level) {
  return `${'  '.repeat(level - 1)}- [${titleCase(heading)}](#${anchor(heading)})`;
}

module.exports = { SMALL_WORDS, anchor, titleCase, tocEntry };
