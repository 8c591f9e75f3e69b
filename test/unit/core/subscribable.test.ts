import { afterEach, describe, expect, it, vi } from 'vitest';
import { createBatcher, createEmitter } from '../../../src/core/subscribable.js';

describe('emitter', () => {
  afterEach(() => vi.restoreAllMocks());

  it('isolates a throwing listener and reports its error', () => {
    const report = vi.spyOn(console, 'error').mockImplementation(() => {});
    const emitter = createEmitter<number>();
    const seen: number[] = [];
    emitter.subscribe(() => {
      throw new Error('boom');
    });
    emitter.subscribe((value) => seen.push(value));
    emitter.emit(1);
    emitter.emit(2);
    expect(seen).toEqual([1, 2]);
    expect(report).toHaveBeenCalledTimes(2);
  });

  it('counts one function subscribed twice as two subscriptions, each ended by its own unsubscribe', () => {
    const emitter = createEmitter<string>();
    const listener = vi.fn();
    const a = emitter.subscribe(listener);
    const b = emitter.subscribe(listener);
    emitter.emit('x');
    expect(listener).toHaveBeenCalledTimes(2);
    a();
    a();
    emitter.emit('y');
    expect(listener).toHaveBeenCalledTimes(3);
    b();
    emitter.emit('z');
    expect(listener).toHaveBeenCalledTimes(3);
  });
});

describe('batcher', () => {
  it('runs once per scheduled tick however often it is requested, and not after cancel', () => {
    const queue: Array<() => void> = [];
    const run = vi.fn();
    const batcher = createBatcher(run, (callback) => queue.push(callback));
    batcher.request();
    batcher.request();
    batcher.request();
    expect(queue).toHaveLength(1);
    queue.shift()!();
    expect(run).toHaveBeenCalledTimes(1);
    batcher.request();
    batcher.cancel();
    queue.shift()!();
    expect(run).toHaveBeenCalledTimes(1);
    batcher.request();
    queue.shift()!();
    expect(run).toHaveBeenCalledTimes(2);
  });
});
