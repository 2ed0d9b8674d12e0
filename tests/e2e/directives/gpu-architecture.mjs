// e2e spec for the GPU architecture explorer (lesson 2): the core total follows the
// directive's params (108 × 64 = 6,912 on the A100); Play schedules the lesson's 2,048
// blocks in 19 waves and ends with every block done; the GTX 1650 preset (14 SMs) needs
// 147 waves; Pause stops mid-launch and, under reduced motion, Resume jumps to the end;
// typed values (132 × 128) give 16,896 cores.

async function waitForState(root, state, timeout = 7000) {
  await root.locator(`xpath=self::*[@data-state="${state}"]`).waitFor({ timeout });
}

export default async function check({ page, figure, params, assert }) {
  const root = figure.locator('.wb-arch');
  const total = figure.locator('.wb-arch .wb-big');
  const planText = figure.locator('.wb-arch .wb-result');
  const progress = figure.locator('.wb-arch-progress');
  const counts = figure.locator('.wb-arch-counts');
  const play = figure.getByRole('button', { name: /^(Play|Pause|Resume|Play again)$/ });
  const smNumber = figure.getByLabel('Streaming multiprocessors (SMs), exact value');
  const coresNumber = figure.getByLabel('FP32 cores per SM, exact value');
  const smRange = figure.getByLabel('Streaming multiprocessors (SMs)', { exact: true });

  assert.equal(await figure.locator('.fallback').isHidden(), true, 'the fallback is hidden');
  assert.equal(await total.getAttribute('aria-live'), 'polite');

  // Opens at the directive's values.
  const sms = params.sms ?? 108;
  const perSm = params.cores_per_sm ?? 64;
  const fmt = (n) => n.toLocaleString('en-US');
  assert.equal(await total.textContent(), `${fmt(sms)} SMs × ${fmt(perSm)} cores = ${fmt(sms * perSm)} CUDA cores`);
  assert.equal(await figure.locator('.wb-sm').count(), sms, 'one square per SM');

  // The A100 and the lesson's relu launch.
  await figure.getByRole('button', { name: 'A100 (108 × 64)' }).click();
  assert.equal(await total.textContent(), '108 SMs × 64 cores = 6,912 CUDA cores');
  assert.match(
    await planText.textContent(),
    /^2,048 blocks ÷ 108 SMs → 19 waves: 18 full waves and a last one of 104 blocks, which leaves 4 SMs idle\./,
  );
  assert.match(await planText.textContent(), /⌈256 \/ 64⌉ = 4 steps per wave, so 19 × 4 = 76 core steps in all\.$/);
  assert.equal(await counts.textContent(), 'Blocks waiting 2,048 · running 0 · done 0');
  await play.click();
  await waitForState(root, 'done');
  assert.equal(await progress.textContent(), 'All 19 waves done');
  assert.equal(await counts.textContent(), 'Blocks waiting 0 · running 0 · done 2,048');
  assert.equal(await figure.locator('.wb-sm[data-kind="done"]').count(), 108);

  // A 14-SM card: the same launch takes 147 waves. Pause part-way, then resume.
  await figure.getByRole('button', { name: 'GTX 1650 (14 × 64)' }).click();
  assert.equal(await total.textContent(), '14 SMs × 64 cores = 896 CUDA cores');
  assert.match(await planText.textContent(), /→ 147 waves: 146 full waves and a last one of 4 blocks, which leaves 10 SMs idle\./);
  assert.equal(await progress.textContent(), '147 waves to run');
  await play.focus();
  await page.keyboard.press('Enter');
  await page.waitForFunction(
    (el) => /^Wave ([2-9]|\d\d)/.test(el.textContent),
    await progress.elementHandle(),
    { timeout: 4000 },
  );
  await page.keyboard.press('Enter'); // Pause
  assert.equal(await root.getAttribute('data-state'), 'paused');
  const paused = await progress.textContent();
  assert.match(paused, /^Wave \d+ of 147$/);
  const running = await counts.textContent();
  assert.match(running, /running 14 /, 'every SM holds a block mid-launch');
  await page.waitForTimeout(150);
  assert.equal(await progress.textContent(), paused, 'paused means paused');
  // Resume under reduced motion: the launch jumps to its end instead of animating.
  const hadReduce = await page.evaluate(() => matchMedia('(prefers-reduced-motion: reduce)').matches);
  await page.emulateMedia({ reducedMotion: 'reduce' });
  try {
    await page.keyboard.press('Enter'); // Resume
    assert.equal(await root.getAttribute('data-state'), 'done');
    assert.equal(await progress.textContent(), 'All 147 waves done');
    assert.equal(await counts.textContent(), 'Blocks waiting 0 · running 0 · done 2,048');
  } finally {
    await page.emulateMedia({ reducedMotion: hadReduce ? 'reduce' : null });
  }

  // Typed values: the H100 SXM's 132 SMs × 128 cores.
  await smNumber.fill('132');
  await coresNumber.fill('128');
  assert.equal(await total.textContent(), '132 SMs × 128 cores = 16,896 CUDA cores');
  assert.match(await planText.textContent(), /→ 16 waves: .*last one of 68 blocks.*= 2 steps per wave, so 16 × 2 = 32 core steps/);
  assert.equal(await smRange.inputValue(), '132', 'the slider follows the box');

  // Keyboard on the SM slider: ArrowLeft removes one SM.
  await smRange.focus();
  await page.keyboard.press('ArrowLeft');
  assert.equal(await smNumber.inputValue(), '131');
  assert.equal(await total.textContent(), '131 SMs × 128 cores = 16,768 CUDA cores');
  assert.equal(await figure.locator('.wb-sm').count(), 131);
}
