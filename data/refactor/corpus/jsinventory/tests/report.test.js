'use strict';
const test = require('node:test');
const assert = require('node:assert');
const { Inventory } = require('../src/inventory.js');
const { pad, table, mentions } = require('../src/report.js');

test('pad and table', () => {
  assert.strictEqual(pad('ab', 4), 'ab  ');
  const inv = new Inventory();
  inv.add('nut', 3);
  inv.add('bolt', 12);
  assert.strictEqual(table(inv), 'bolt      12\nnut       3');
});

test('mentions', () => {
  assert.deepStrictEqual(mentions('a bolt and a nut', ['nut', 'gear', 'bolt']), ['nut', 'bolt']);
});
