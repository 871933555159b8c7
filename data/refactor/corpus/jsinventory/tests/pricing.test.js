'use strict';
const test = require('node:test');
const assert = require('node:assert');
const { discountFor, total, cheapest } = require('../src/pricing.js');

test('discount codes', () => {
  assert.strictEqual(discountFor('VIP'), 20);
  assert.strictEqual(discountFor('STAFF'), 30);
  assert.strictEqual(discountFor('SPRING'), 10);
  assert.strictEqual(discountFor('NOPE'), 0);
});

test('total with a discount', () => {
  const lines = [{ name: 'a', price: 250, count: 2 }, { name: 'b', price: 100, count: 1 }];
  assert.strictEqual(total(lines, 'VIP'), 480);
  assert.strictEqual(total(lines, ''), 600);
});

test('cheapest line', () => {
  assert.strictEqual(cheapest([]), null);
  assert.strictEqual(cheapest([{ name: 'x', price: 5 }, { name: 'y', price: 3 }]), 'y');
});
