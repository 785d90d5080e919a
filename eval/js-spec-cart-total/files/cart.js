'use strict';

// Shopping cart helpers for the shop front end.
// A cart is an array of { name, price, qty } objects.

function addItem(cart, name, price, qty = 1) {
  const existing = cart.find((item) => item.name === name);
  if (existing) {
    existing.qty += qty;
  } else {
    cart.push({ name, price, qty });
  }
  return cart;
}

function itemCount(cart) {
  return cart.reduce((n, item) => n + item.qty, 0);
}

function removeItem(cart, name) {
  return cart.filter((item) => item.name !== name);
}

module.exports = { addItem, itemCount, removeItem };
