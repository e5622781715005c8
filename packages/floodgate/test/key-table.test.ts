import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { KeyTable } from '../src/stores/key-table.js';
import { runs } from './support/sweep.js';

const keyArb = fc.oneof(
  fc.string({ maxLength: 24 }),
  fc.string({ unit: 'grapheme', maxLength: 8 }), // non-Latin-1 keys take the two-byte path
  fc.integer({ min: 0, max: 40 }).map((n) => `k${n}`), // few distinct keys: many hits and removals
);

describe('KeyTable', () => {
  test('behaves as a Map from key to slot under random inserts, finds and removals', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.constantFrom('insert', 'remove', 'find'), keyArb), { maxLength: 400 }),
        (ops) => {
          const table = new KeyTable(2, 16);
          const model = new Map<string, number>();
          for (const [op, key] of ops) {
            if (op === 'insert') {
              const slot = table.findOrInsert(key);
              assert.equal(table.inserted, !model.has(key));
              if (model.has(key)) assert.equal(slot, model.get(key));
              model.set(key, slot);
            } else if (op === 'remove') {
              const slot = table.find(key);
              assert.equal(slot, model.get(key) ?? -1);
              if (slot >= 0) table.remove(slot);
              model.delete(key);
            } else {
              assert.equal(table.find(key), model.get(key) ?? -1);
            }
            assert.equal(table.size, model.size);
          }
          for (const [key, slot] of model) {
            assert.equal(table.keyAt(slot), key);
            assert.equal(table.find(key), slot);
          }
        },
      ),
      { numRuns: runs(300) },
    );
  });

  test('grows, reuses freed slots, and compacts its arena under churn', () => {
    const table = new KeyTable(2, 16);
    for (let i = 0; i < 50_000; i++) table.findOrInsert(`user:${i}`);
    assert.equal(table.size, 50_000);
    for (let i = 0; i < 50_000; i += 2) table.remove(table.find(`user:${i}`));
    assert.equal(table.size, 25_000);
    const highWater = table.highWater;
    for (let i = 0; i < 25_000; i++) table.findOrInsert(`fresh:${i}`);
    assert.equal(table.highWater, highWater, 'freed slots are reused before new ones');
    for (let i = 1; i < 50_000; i += 2) assert.ok(table.find(`user:${i}`) >= 0);
    for (let i = 0; i < 50_000; i += 2) assert.equal(table.find(`user:${i}`), -1);
    // Churn through many short-lived keys: the arena is compacted, not grown without end.
    for (let round = 0; round < 20; round++) {
      for (let i = 0; i < 5_000; i++) table.findOrInsert(`churn:${round}:${i}`);
      for (let i = 0; i < 5_000; i++) table.remove(table.find(`churn:${round}:${i}`));
    }
    assert.equal(table.size, 50_000);
    assert.ok(table.bytesUsed() < 8 * 1024 * 1024, `bytes used ${table.bytesUsed()}`);
  });

  test('keeps long keys out of line and state cells apart from keys', () => {
    const table = new KeyTable(2, 16);
    const long = (i: number): string => `tenant:${'x'.repeat(40)}:${i}`;
    for (let i = 0; i < 2_000; i++) {
      const slot = table.findOrInsert(long(i));
      table.records[slot * table.stride + 3] = i; // the first state cell
      table.records[slot * table.stride + 4] = -i;
    }
    for (let i = 0; i < 2_000; i += 3) table.remove(table.find(long(i)));
    for (let i = 0; i < 2_000; i++) {
      const slot = table.find(long(i));
      if (i % 3 === 0) assert.equal(slot, -1);
      else {
        assert.equal(table.keyAt(slot), long(i));
        assert.equal(table.records[slot * table.stride + 3], i, 'state survives growth and compaction');
        assert.equal(table.records[slot * table.stride + 4], -i);
      }
    }
  });

  test('tells apart keys that differ only in width or in the high byte of a character', () => {
    const table = new KeyTable(2, 16);
    const keys = ['a', 'ā', '\u0161', '\u0061\u0000', '\u0100', '', 'é', 'e\u0301'];
    const slots = keys.map((k) => table.findOrInsert(k));
    assert.equal(new Set(slots).size, keys.length);
    keys.forEach((k, i) => assert.equal(table.find(k), slots[i]));
  });
});
