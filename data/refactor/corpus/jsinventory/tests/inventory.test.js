'use strict';
const test = require('node:test');
const assert = require('node:assert');
const { Inventory } = require('../src/inventory.js');

test('add and remove', () => {
  const inv = new Inventory();
  assert.strictEqual(inv.add('bolt', 5), 5);
  assert.strictEqual(inv.remove('bolt', 2), 3);
  assert.strictEqual(inv.remove('bolt', 3), 0);
  assert.strictEqual(inv.has('bolt'), false);
});

test('remove too many throws', () => {
  const inv = new Inventory();
  inv.add('nut', 1);
  assert.throws(() => inv.remove('nut', 2), /not enough nut/);
});

test('names sorted and low stock', () => {
  const inv = new Inventory();
  inv.add('washer', 9);
  inv.add('bolt', 1);
  inv.add('nut', 2);
  assert.deepStrictEqual(inv.names(), ['bolt', 'nut', 'washer']);
  assert.deepStrictEqual(inv.low(2), ['bolt', 'nut']);
  assert.strictEqual(inv.has('nut'), true);
});
