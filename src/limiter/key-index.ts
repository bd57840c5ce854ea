import { randomInt } from 'node:crypto';

/** A probe this long means keys collide far beyond chance: someone chose them. */
const MAX_PROBE = 128;
/** Table entries per slot at most, as a power of two: the load stays at or under one half. */
const TABLE_PER_SLOT = 2;
const SEED_RANGE = 2 ** 32;

/**
 * Strings to slot numbers for {@link KeyedLimiter}: open addressing with linear probing over an
 * `Int32Array` of (slot, hash) pairs — a probe reads the hash beside the slot, so it touches no
 * other memory until the hashes match — and backward-shift deletion (no tombstones, so a million
 * inserts and deletes leave no debris). With a `Map`, a key not seen yet cost a lookup, an insert
 * and (past `maxKeys`) a delete, each a walk of a table whose entries lie far from what they
 * compare; here each is a short run over adjacent entries.
 *
 * Keys come from clients, so they may be chosen to collide (hash flooding): the hash is seeded at
 * random per index, and an insert that ever probes {@link MAX_PROBE} entries re-seeds and rebuilds.
 *
 * Slots are the caller's: it says which slot a key goes in, and how many slots there are.
 */
export class KeyIndex {
  /** Per table entry, two numbers: slot + 1 (0: empty), and that key's hash. */
  #table: Int32Array;
  #mask: number;
  /** Per slot: the key's hash, and the key (undefined when the slot is free). */
  #hashes: Int32Array;
  #keys: (string | undefined)[];
  #seed: number;
  #size = 0;

  constructor(slots: number, seed = randomInt(SEED_RANGE)) {
    this.#seed = seed;
    this.#hashes = new Int32Array(slots);
    this.#keys = new Array<string | undefined>(slots).fill(undefined);
    this.#table = new Int32Array(2 * tableLength(slots));
    this.#mask = this.#table.length / 2 - 1;
  }

  /** Keys held. */
  get size(): number {
    return this.#size;
  }

  /** The hash seed in use; it changes when a flood of colliding keys forces a rebuild. */
  get seed(): number {
    return this.#seed;
  }

  /** The key in `slot`, or undefined when the slot is free. */
  keyOf(slot: number): string | undefined {
    return this.#keys[slot];
  }

  /** FNV-1a over the UTF-16 code units from a random basis, then MurmurHash3's finaliser so low bits mix well. */
  hash(key: string): number {
    let hash = this.#seed;
    for (let i = 0; i < key.length; i++) hash = Math.imul(hash ^ key.charCodeAt(i), 0x01000193);
    hash ^= hash >>> 16;
    hash = Math.imul(hash, 0x85ebca6b);
    hash ^= hash >>> 13;
    hash = Math.imul(hash, 0xc2b2ae35);
    return hash ^ (hash >>> 16);
  }

  /** The slot holding `key` (whose {@link hash} is `hash`), or -1. */
  find(key: string, hash: number): number {
    const table = this.#table;
    const mask = this.#mask;
    for (let at = hash & mask; ; at = (at + 1) & mask) {
      const entry = table[2 * at]!;
      if (entry === 0) return -1;
      if (table[2 * at + 1] === hash && this.#keys[entry - 1] === key) return entry - 1;
    }
  }

  /** Puts `key`, which must not be held, in the free `slot`. */
  insert(key: string, hash: number, slot: number): void {
    this.#hashes[slot] = hash;
    this.#keys[slot] = key;
    this.#size++;
    if (this.#place(slot, hash) >= MAX_PROBE) this.#rebuild(randomInt(SEED_RANGE));
  }

  /** Frees `slot`, which must be held. */
  remove(slot: number): void {
    const table = this.#table;
    const mask = this.#mask;
    let hole = this.#hashes[slot]! & mask;
    while (table[2 * hole] !== slot + 1) hole = (hole + 1) & mask;
    // Backward shift: pull each later entry of the run into the hole unless its home lies
    // cyclically after the hole (moving it would put it before its home, where probes never look).
    for (let at = (hole + 1) & mask; table[2 * at] !== 0; at = (at + 1) & mask) {
      const home = table[2 * at + 1]! & mask;
      if (((at - home) & mask) >= ((at - hole) & mask)) {
        table[2 * hole] = table[2 * at]!;
        table[2 * hole + 1] = table[2 * at + 1]!;
        hole = at;
      }
    }
    table[2 * hole] = 0;
    this.#keys[slot] = undefined;
    this.#size--;
  }

  /** Makes room for slots up to `slots` (more than now), keeping every key where it is. */
  grow(slots: number): void {
    const hashes = new Int32Array(slots);
    hashes.set(this.#hashes);
    this.#hashes = hashes;
    for (let slot = this.#keys.length; slot < slots; slot++) this.#keys.push(undefined);
    this.#rebuild(this.#seed);
  }

  /** Links `slot` in at the first empty entry from its home; returns how far it had to look. */
  #place(slot: number, hash: number): number {
    const table = this.#table;
    const mask = this.#mask;
    let probe = 0;
    let at = hash & mask;
    while (table[2 * at] !== 0) {
      at = (at + 1) & mask;
      probe++;
    }
    table[2 * at] = slot + 1;
    table[2 * at + 1] = hash;
    return probe;
  }

  /** A fresh table sized for the slots, every key re-linked; with a new seed, every hash recomputed. */
  #rebuild(seed: number): void {
    const reseed = seed !== this.#seed;
    this.#seed = seed;
    this.#table = new Int32Array(2 * tableLength(this.#hashes.length));
    this.#mask = this.#table.length / 2 - 1;
    for (let slot = 0; slot < this.#keys.length; slot++) {
      const key = this.#keys[slot];
      if (key === undefined) continue;
      if (reseed) this.#hashes[slot] = this.hash(key);
      this.#place(slot, this.#hashes[slot]!);
    }
  }
}

function tableLength(slots: number): number {
  return 2 ** Math.ceil(Math.log2(Math.max(1, slots) * TABLE_PER_SLOT));
}
