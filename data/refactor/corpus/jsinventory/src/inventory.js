'use strict';

// Stock levels per item: add, remove, look up, list what runs low.
class Inventory {
  constructor() {
    this.items = new Map();
  }

  add(name, count) {
    var current = this.items.get(name) || 0;
    this.items.set(name, current + count);
    return current + count;
  }

  remove(name, count) {
    var current = this.items.get(name) || 0;
    if (count > current) {
      throw new Error('not enough ' + name + ': ' + current + ' left');
    }
    var left = current - count;
    if (left == 0) {
      this.items.delete(name);
    } else {
      this.items.set(name, left);
    }
    return left;
  }

  has(name) {
    return this.names().indexOf(name) !== -1;
  }

  names() {
    var out = Array.from(this.items.keys());
    out.sort();
    return out;
  }

  low(threshold) {
    var out = [];
    for (const name of this.names()) {
      if (this.items.get(name) <= threshold) {
        out.push(name);
      }
    }
    return out;
  }
}

module.exports = { Inventory };
