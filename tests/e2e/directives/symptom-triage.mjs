// e2e check of the symptom triage (lesson 9): pick a symptom, answer its two questions,
// and read the cause, the ordered fixes and the links; changing answers must not move the
// page (the widget reserves its tallest height).
export default async function check({ page, figure, assert }) {
  const live = figure.locator('.tw-triage-live');

  assert.equal(await figure.locator('.fallback').isHidden(), true);
  assert.ok((await live.textContent()).startsWith('Pick a symptom'));
  const before = await figure.boundingBox();

  // OOM in the first step with a floor well below the card → activations, the OOM row.
  await figure.getByLabel('Crash: “CUDA out of memory”').check();
  await figure.getByLabel('In the first training step').check();
  assert.equal(await figure.locator('[data-diagnosed="true"]').count(), 0, 'no answer before both questions');
  await figure.getByLabel('Well below the card').check();
  await figure.locator('[data-diagnosed="true"]').waitFor({ timeout: 3000 });
  assert.ok((await live.textContent()).includes('Activations'));
  assert.ok((await figure.locator('.tw-triage-row').textContent()).includes('CUDA out of memory after the model loaded fine'));
  const fixes = await figure.locator('.tw-triage-list').nth(1).locator('li').allTextContents();
  assert.ok(fixes[0].startsWith('Halve the per-step batch'), fixes[0]);
  assert.ok(fixes[2].startsWith('Mixed precision'), fixes[2]);
  const hrefs = await figure.locator('.tw-triage-links a').evaluateAll((as) => as.map((a) => a.getAttribute('href')));
  assert.ok(hrefs.includes('/lessons/gpu-memory#fixing-an-out-of-memory-error-in-order'), hrefs.join(' '));

  // Device mismatch raised in the loss line → the labels were left behind.
  await figure.getByLabel('Crash: “Expected all tensors to be on the same device”').check();
  await live.filter({ hasText: 'Answer both questions' }).waitFor({ timeout: 3000 });
  await figure.getByLabel('The loss line (cross_entropy)').check();
  await figure.getByLabel('Some fields are moved one by one').check();
  await live.filter({ hasText: 'labels' }).waitFor({ timeout: 3000 });
  assert.ok((await figure.locator('.tw-triage-row').textContent()).includes('Device mismatch'));

  // Loss is NaN in FP16 but fine in FP32 → GradScaler.
  await figure.getByLabel('The loss is NaN or inf').check();
  await figure.getByLabel('FP16 autocast').check();
  await figure.getByLabel('Yes, only the 16-bit run breaks').check();
  await live.filter({ hasText: '65,504' }).waitFor({ timeout: 3000 });
  const nanFix = await figure.locator('.tw-triage-list').nth(1).locator('li').first().textContent();
  assert.ok(nanFix.includes('GradScaler'), nanFix);

  // On a wide screen the answer sits beside the questions in reserved space: no shift.
  if ((page.viewportSize()?.width ?? 0) >= 1024) {
    const after = await figure.boundingBox();
    assert.equal(Math.round(after.height), Math.round(before.height), 'the widget keeps its height');
  }

  await figure.getByRole('button', { name: 'Start over' }).click();
  await live.filter({ hasText: 'Pick a symptom' }).waitFor({ timeout: 3000 });
}
