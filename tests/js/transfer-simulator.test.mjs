// Unit tests of the transfer simulator's logic (lesson 4): tensor sizes, copy times, the
// console lines and the device errors must match the lesson and the server's fallback.
import { test } from 'node:test';
import { thousands } from '../../web/static/js/logic/numbers.js';
import assert from 'node:assert/strict';
import {
  NUMPY_ERROR,
  SAME_DEVICE_ERROR,
  TENSORS,
  copySeconds,
  createState,
  decimalSize,
  formatSeconds,
  formatShape,
  hbmSeconds,
  linkChoices,
  move,
  runOperation,
  tensorBytes,
} from '../../web/static/js/logic/transfer-simulator.js';

const byName = Object.fromEntries(TENSORS.map((t) => [t.name, t]));

test('tensor sizes match the lesson table (decimal units)', () => {
  assert.equal(tensorBytes(byName.x), 19_267_584);
  assert.equal(tensorBytes(byName.w), 1_048_576);
  assert.equal(tensorBytes(byName.b), 2_048);
  assert.equal(decimalSize(19_267_584), '19.27 MB');
  assert.equal(decimalSize(1_048_576), '1.05 MB');
  assert.equal(decimalSize(2_048), '2.05 KB');
  assert.equal(thousands(19_267_584), '19,267,584');
});

test('copy time is bytes over bandwidth, as in the lesson and the fallback', () => {
  assert.equal(copySeconds(32e9, 32), 1);
  assert.equal(formatSeconds(copySeconds(19_267_584, 32)), '602.11 µs'); // lesson: ≈ 0.60 ms
  assert.equal(formatSeconds(copySeconds(19_267_584, 64)), '301.06 µs'); // lesson: ≈ 0.30 ms
  assert.equal(formatSeconds(copySeconds(1_048_576, 32)), '32.77 µs');
  assert.equal(formatSeconds(copySeconds(2_048, 32)), '64 ns'); // lesson: about 64 nanoseconds
  assert.equal(formatSeconds(copySeconds(12_582_912, 32)), '393.22 µs'); // lesson 6: ≈ 0.39 ms
  assert.equal(formatSeconds(hbmSeconds(19_267_584)), '9.63 µs'); // lesson: ≈ 9.6 µs at 2 TB/s
  assert.equal(formatSeconds(1.5e-3), '1.50 ms');
});

test('shapes print as Python tuples', () => {
  assert.equal(formatShape([32, 3, 224, 224]), '(32, 3, 224, 224)');
  assert.equal(formatShape([512]), '(512,)');
});

test('moving a tensor prints the PyTorch line and accumulates bus traffic', () => {
  let state = createState(32);
  const there = move(state, 'x');
  assert.equal(there.lines[0].text, 'x = x.to("cuda")');
  assert.match(there.lines[1].text, /19,267,584 bytes \(19\.27 MB\) at 32 GB\/s ≈ 602\.11 µs/);
  state = there.state;
  assert.equal(state.places.x, 'cuda');
  const back = move(state, 'x');
  assert.equal(back.lines[0].text, 'x = x.to("cpu")');
  assert.match(back.lines[1].text, /device → host/);
  state = back.state;
  assert.equal(state.places.x, 'cpu');
  assert.equal(state.copies, 2);
  assert.equal(state.bytesMoved, 2 * 19_267_584);
  assert.equal(formatSeconds(state.secondsOnBus), '1.20 ms');
});

test('an operation across devices raises the same-device error, worded like PyTorch', () => {
  let state = createState();
  assert.equal(runOperation(state, 'add-bias').ok, true);
  state = move(state, 'w').state;
  const mixed = runOperation(state, 'add-bias');
  assert.equal(mixed.ok, false);
  assert.equal(
    mixed.lines[1].text,
    'RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!',
  );
  assert.equal(SAME_DEVICE_ERROR, mixed.lines[1].text);
  state = move(state, 'b').state;
  const together = runOperation(state, 'add-bias');
  assert.equal(together.ok, true);
  assert.match(together.lines[1].text, /cuda:0/);
});

test('.numpy() on a CUDA tensor fails with the TypeError from the lesson', () => {
  let state = createState();
  assert.equal(runOperation(state, 'numpy').ok, true);
  state = move(state, 'x').state;
  const result = runOperation(state, 'numpy');
  assert.equal(result.ok, false);
  assert.equal(result.lines[1].text, NUMPY_ERROR);
  assert.match(NUMPY_ERROR, /^TypeError: can't convert cuda:0 device type tensor to numpy\. Use Tensor\.cpu\(\)/);
});

test('a directive bandwidth outside the usual links is offered too', () => {
  assert.deepEqual(linkChoices(32).map((l) => l.gbps), [32, 64]);
  assert.deepEqual(linkChoices(16).map((l) => l.gbps), [16, 32, 64]);
});
