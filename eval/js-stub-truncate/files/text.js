// Text helpers for list views.

function shout(s) {
  return s.toUpperCase() + '!';
}

function truncate(text, max) {
  // TODO: see README.md
  throw new Error('TODO');
}

module.exports = { shout, truncate };
