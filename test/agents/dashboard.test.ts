import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { launchChromium } from '../helpers/browser.ts';
import { freshStore, ROOT, startWeirProcess, type Store, type WeirProcess } from '../helpers/weir-process.ts';
import { startAgent, type AgentProcess } from './helpers.ts';

/** The dashboard's agents panel in a real browser: enroll, copy the command, watch the agent connect. */
describe('dashboard agents panel', () => {
  let store: Store;
  let weir: WeirProcess;
  let browser: Browser;
  let agent: AgentProcess | undefined;
  before(async () => {
    store = await freshStore();
    weir = await startWeirProcess(store.env);
    browser = await launchChromium();
  });
  after(async () => {
    agent?.child.kill('SIGKILL');
    await agent?.exited;
    await browser?.close();
    await weir?.stop('SIGKILL');
    await store?.drop();
  });

  it('never puts API text into markup', () => {
    const js = readFileSync(`${ROOT}src/dashboard/public/agents.js`, 'utf8');
    assert.doesNotMatch(js, /innerHTML|outerHTML|insertAdjacentHTML|document\.write/);
  });

  it('enrolls an agent, shows its connect command once, and shows it connected when it runs', async () => {
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(weir.base + '/');
    await page.fill('#key', weir.bootstrapKey!);
    await page.click('#signin-form button');
    await page.waitForSelector('#agents li');
    assert.equal(await page.textContent('#agents'), 'No agents yet.');

    await page.fill('#agent-name', 'laptop <b>bold</b>');
    await page.click('#new-agent button');
    await page.waitForSelector('#agent-enrolled:not([hidden])');
    const command = (await page.textContent('#agent-command'))!;
    const m = /^npx weir agent --server (\S+) --token (wr_agent_\S+)$/.exec(command);
    assert.ok(m, command);
    assert.equal(m[1], weir.base);
    await page.waitForSelector('#agents li.agent');
    assert.match((await page.textContent('#agents li.agent'))!, /laptop <b>bold<\/b>\s*development\s*never connected/);
    assert.equal(await page.locator('#agents b').count(), 0, 'a name is text, never markup');

    agent = startAgent(m[1], m[2]);
    await agent.waitForEvent((e) => e.event === 'connected', 'the agent to connect');
    await page.waitForSelector('#agents li.agent span[title="connected"]', { timeout: 15_000 });
    assert.match((await page.textContent('#agents li.agent'))!, /connected from \S+ \(v0\.1\.0\)/);
    assert.deepEqual(errors, []);
  });
});
