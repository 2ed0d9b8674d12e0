// e2e check of the step stepper (lesson 6): walk the training step line by line with the
// buttons and the keyboard, and check the stage, what the CPU and GPU do, and what is in
// memory after zero_grad, forward, backward and logging.
export default async function check({ page, figure, assert }) {
  const position = figure.locator('.tw-stepper-position');
  const next = figure.getByRole('button', { name: 'Next line →' });
  const previous = figure.getByRole('button', { name: '← Previous line' });
  const device = figure.locator('.tw-stepper-memory-column').nth(1);
  const badge = (n) => figure.locator('.tw-stepper-card .tw-badge').nth(n).textContent();
  const at = (text) => figure.locator('.tw-stepper-position', { hasText: text }).waitFor({ timeout: 3000 });

  assert.equal(await figure.locator('.fallback').isHidden(), true);
  assert.equal(await position.textContent(), 'Line 1 of 8 · Batch read: Build the batch');
  assert.equal(await previous.isDisabled(), true);
  assert.equal(await badge(1), 'Idle', 'the GPU idles while the CPU reads the batch');
  assert.equal(await figure.locator('[aria-current="step"]').textContent(), 'Batch read');

  await next.click();
  await at('Line 2 of 8 · Device copy');
  assert.equal(await badge(0), 'Waiting', 'a plain .to() makes the CPU wait');
  assert.ok((await device.locator('.tw-tensor-new').allTextContents()).some((t) => t.includes('features (4, 8) float32, 128 B')));

  // Keyboard from here: Enter on the focused Next button.
  await next.focus();
  await page.keyboard.press('Enter');
  await at('optimizer.zero_grad()');
  const freed = await device.locator('.tw-tensor-freed').allTextContents();
  assert.equal(freed.length, 2, 'zero_grad frees both old gradients');
  assert.ok(freed[0].includes('model.weight.grad'), freed[0]);

  await page.keyboard.press('Enter');
  await at('Forward pass');
  assert.ok((await device.locator('.tw-tensor-new').textContent()).includes('logits (4, 3) float32, 48 B'));
  assert.equal(await figure.locator('.tw-code-current').textContent(), 'logits = model(features)');

  // The stage buttons jump to their first line.
  await figure.getByRole('button', { name: 'Backward' }).click();
  await at('loss.backward()');
  assert.equal(await figure.locator('[aria-current="step"]').textContent(), 'Backward');
  const created = await device.locator('.tw-tensor-new').allTextContents();
  assert.ok(created.some((t) => t.includes('model.weight.grad (3, 8) float32, 96 B')), created.join(' | '));
  assert.ok(created.some((t) => t.includes('model.bias.grad (3,) float32, 12 B')), created.join(' | '));

  await next.click();
  await at('optimizer.step()');
  await next.click();
  await at('Line 8 of 8 · Logging');
  assert.equal(await badge(0), 'Waiting', 'reading the loss makes the CPU wait');
  assert.equal(await next.isDisabled(), true);
  assert.ok((await figure.locator('.tw-code-current').textContent()).includes('.item()'));

  await figure.getByRole('button', { name: 'Start over' }).click();
  await at('Line 1 of 8');
}
