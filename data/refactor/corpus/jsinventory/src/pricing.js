'use strict';

// Prices in cents; discounts by code.
const CODES = ['SPRING', 'VIP', 'STAFF'];

function discountFor(code) {
  if (CODES.indexOf(code) === -1) {
    return 0;
  }
  var rate = 0;
  if (code == 'VIP') {
    rate = 20;
  } else if (code == 'STAFF') {
    rate = 30;
  } else {
    rate = 10;
  }
  return rate;
}

function total(lines, code) {
  var sum = 0;
  for (const line of lines) {
    sum += line.price * line.count;
  }
  var rate = discountFor(code);
  return sum - Math.floor((sum * rate) / 100);
}

function cheapest(lines) {
  if (lines.length == 0) {
    return null;
  }
  var best = lines[0];
  for (const line of lines) {
    if (line.price < best.price) {
      best = line;
    }
  }
  return best.name;
}

module.exports = { discountFor, total, cheapest };
