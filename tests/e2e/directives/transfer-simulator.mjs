// e2e check of the device transfer simulator (lesson 4), as a student would use it: move
// tensors across the bus with the mouse and the keyboard, read the PyTorch line and the
// copy time in the console, and trigger the same-device and NumPy errors.
export default async function check({ page, figure, params, assert }) {
  const gbps = Number(params.bandwidth_gbps ?? 32);
  const micro = (bytes) => `${((bytes / (gbps * 1e9)) * 1e6).toFixed(2)} µs`;
  const consoleLine = (text) => figure.locator('.tw-console-line', { hasText: text }).last();

  assert.equal(await figure.locator('.fallback').isHidden(), true, 'the fallback is hidden');
  assert.equal(await figure.locator('select').inputValue(), String(gbps), 'the link starts at the lesson bandwidth');

  // Click x (the (32, 3, 224, 224) batch): it lands in the GPU box and the console explains.
  await figure.locator('button[data-tensor="x"]').click();
  await figure.locator('.tw-xfer-cuda button[data-tensor="x"]').waitFor();
  await consoleLine('x = x.to("cuda")').waitFor();
  const copyLine = await consoleLine('19,267,584 bytes').textContent();
  assert.ok(copyLine.includes('19.27 MB'), copyLine);
  assert.ok(copyLine.includes(micro(19_267_584)), `${copyLine} shows ${micro(19_267_584)}`);
  if (gbps === 32) assert.ok(copyLine.includes('602.11 µs'), copyLine);

  // x.numpy() on a CUDA tensor fails with PyTorch's TypeError.
  await figure.getByRole('button', { name: 'a = x.numpy()' }).click();
  await consoleLine("TypeError: can't convert cuda:0 device type tensor to numpy").waitFor();

  // Move w only, then mix devices: the same-device error, worded like PyTorch.
  await figure.locator('button[data-tensor="w"]').click();
  await figure.locator('.tw-xfer-cuda button[data-tensor="w"]').waitFor();
  await figure.getByRole('button', { name: 'y = w + b' }).click();
  await consoleLine('RuntimeError').waitFor();
  const error = await consoleLine('RuntimeError').textContent();
  assert.equal(
    error,
    'RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!',
  );

  // Keyboard: focus b and press Enter; it moves too, and the operation now succeeds.
  await figure.locator('button[data-tensor="b"]').focus();
  await page.keyboard.press('Enter');
  await figure.locator('.tw-xfer-cuda button[data-tensor="b"]').waitFor();
  const stillFocused = await figure.locator('button[data-tensor="b"]').evaluate((b) => b === document.activeElement);
  assert.ok(stillFocused, 'focus follows the moved tensor');
  const bLine = await consoleLine('2,048 bytes').textContent();
  assert.ok(bLine.includes('2.05 KB'), bLine);
  await figure.getByRole('button', { name: 'y = w + b' }).click();
  await consoleLine('# ok: y is (512, 512) on cuda:0').waitFor();

  const totals = await figure.locator('.tw-xfer-totals').textContent();
  assert.ok(totals.includes('3 copies'), totals);
  assert.ok(totals.includes(Number(19_267_584 + 1_048_576 + 2_048).toLocaleString('en-US')), totals);

  // Start over puts everything back on the CPU.
  await figure.getByRole('button', { name: 'Start over' }).click();
  await figure.locator('.tw-xfer-cpu button[data-tensor="x"]').waitFor();
  assert.equal(await figure.locator('.tw-xfer-cuda button').count(), 0);
}
