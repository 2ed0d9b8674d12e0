// e2e spec for the parallel-race widget (lesson 1): the numbers it starts with follow the
// directive's params; a student's race with the lesson defaults finishes with 128 CPU
// rounds, 4 GPU rounds and "32× sooner"; 8 tasks leave 248 GPU cores idle; faster CPU
// cores let the CPU win; and with reduced motion the race jumps straight to the end.

/** Waits (bounded) until the race reports the wanted state. */
async function waitForState(root, state, timeout = 6000) {
  await root.locator(`xpath=self::*[@data-state="${state}"]`).waitFor({ timeout });
}

export default async function check({ page, figure, params, assert }) {
  const root = figure.locator('.wb-race');
  const tasks = figure.getByLabel('Tasks', { exact: true });
  const cpu = figure.getByLabel('CPU cores', { exact: true });
  const gpu = figure.getByLabel('GPU cores', { exact: true });
  const speed = figure.getByLabel('One CPU core finishes a task');
  const start = figure.getByRole('button', { name: /Start the race|Run again|Restart/ });
  const summary = figure.locator('.wb-race-summary');
  const note = figure.locator('.wb-race-note');
  const laneCounts = figure.locator('.wb-race-lane-count');

  assert.equal(await figure.locator('.fallback').isHidden(), true, 'the fallback is hidden');
  assert.equal(await summary.getAttribute('aria-live'), 'polite');

  // The opening numbers come from the directive's params.
  const t = params.tasks ?? 1024;
  const c = params.cpu_cores ?? 8;
  const g = params.gpu_cores ?? 256;
  assert.equal(await tasks.inputValue(), String(t));
  assert.equal(await cpu.inputValue(), String(c));
  assert.equal(await gpu.inputValue(), String(g));
  const fmt = (n) => n.toLocaleString('en-US');
  const cpuRounds = Math.ceil(t / c);
  const gpuRounds = Math.ceil(t / g);
  assert.match(await summary.textContent(), new RegExp(`= ${fmt(cpuRounds)} rounds\\. GPU: .* = ${fmt(gpuRounds)} rounds`));

  // The lesson's race: 1,024 tasks on 8 against 256 cores.
  await tasks.fill('1024');
  await cpu.fill('8');
  await gpu.fill('256');
  assert.equal(
    await summary.textContent(),
    'CPU: 1,024 tasks ÷ 8 cores = 128 rounds. GPU: 1,024 ÷ 256 = 4 rounds. The GPU finishes 32× sooner.',
  );
  assert.equal(await laneCounts.nth(0).textContent(), '128 rounds to run');
  await start.click();
  await waitForState(root, 'done');
  assert.equal(await laneCounts.nth(0).textContent(), 'done after 128 rounds');
  assert.equal(await laneCounts.nth(1).textContent(), 'done after 4 rounds');
  assert.match(await summary.textContent(), /^Finished\. .*The GPU finishes 32× sooner\.$/);
  assert.equal(await note.textContent(), 'Every GPU core has a task in every round.');
  assert.match(await figure.locator('canvas').nth(1).getAttribute('aria-label'), /1,024 of 1,024 tasks done/);

  // Eight tasks: one round each, and most GPU cores idle.
  await tasks.fill('8');
  assert.equal(await root.getAttribute('data-state'), 'idle', 'changing a value resets the race');
  assert.match(await summary.textContent(), /= 1 round\. GPU: 8 ÷ 256 = 1 round\. Both lanes finish at the same time\.$/);
  assert.equal(await note.textContent(), "In the GPU's last round only 8 of its 256 cores have a task; 248 sit idle.");

  // CPU cores four times as fast: the CPU wins the small job, the GPU still wins the big one.
  await speed.selectOption('4');
  assert.match(await summary.textContent(), /The CPU finishes 4× sooner\.$/);
  await tasks.fill('1024');
  assert.match(await summary.textContent(), /The GPU finishes 8× sooner\.$/);

  // Keyboard: ArrowUp in the task box adds one task (1,025 needs a fifth GPU round).
  await tasks.focus();
  await page.keyboard.press('ArrowUp');
  assert.equal(await tasks.inputValue(), '1025');
  assert.match(await summary.textContent(), /GPU: 1,025 ÷ 256 = 5 rounds/);

  // Reduced motion: the race jumps straight to its end state.
  const hadReduce = await page.evaluate(() => matchMedia('(prefers-reduced-motion: reduce)').matches);
  await page.emulateMedia({ reducedMotion: 'reduce' });
  try {
    await speed.selectOption('1');
    await tasks.fill('1000');
    await start.focus();
    await page.keyboard.press('Enter');
    assert.equal(await root.getAttribute('data-state'), 'done', 'no animation under reduced motion');
    assert.equal(await laneCounts.nth(0).textContent(), 'done after 125 rounds');
    assert.match(await summary.textContent(), /The GPU finishes 31\.25× sooner\.$/);
  } finally {
    await page.emulateMedia({ reducedMotion: hadReduce ? 'reduce' : null });
  }
}
