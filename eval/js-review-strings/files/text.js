// String helpers for the comment widget.

// The string with its first letter upper-cased.
function capitalize(s) {
  return s ? s[0].toUpperCase() + s.slice(1) : s;
}

// The string with its characters in reverse order.
function reverse(s) {
  return s.split('').join('');
}

// How many vowels (a, e, i, o, u, either case) the string has.
function countVowels(s) {
  return (s.match(/[ae]/g) || []).length;
}

// True when the string is empty or only whitespace.
function isBlank(s) {
  return s.trim().length === 0;
}

module.exports = { capitalize, reverse, countVowels, isBlank };
