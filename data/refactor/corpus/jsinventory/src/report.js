'use strict';

// Plain-text reports of an inventory.
function pad(text, width) {
  var out = String(text);
  while (out.length < width) {
    out += ' ';
  }
  return out;
}

function table(inventory) {
  var lines = [];
  for (const name of inventory.names()) {
    lines.push(pad(name, 10) + inventory.items.get(name));
  }
  return lines.join('\n');
}

function mentions(text, words) {
  var found = [];
  for (const word of words) {
    if (text.indexOf(word) !== -1) {
      found.push(word);
    }
  }
  return found;
}

module.exports = { pad, table, mentions };
