'use strict';
// Query-string helpers for the link checker.

function stringifyQuery(params) {
  return Object.keys(params)
    .map((k) => [].concat(params[k]).map((v) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&'))
    .join('&');
}

function parseQuery(qs) {
  // TODO: see SPEC.md
  throw new Error('not implemented');
}

function withParam(url, key, value) {
  const [base, qs = ''] = url.split('?');
  const params = parseQuery(qs);
  params[key] = value;
  return `${base}?${stringifyQuery(params)}`;
}

module.exports = { parseQuery, stringifyQuery, withParam };
