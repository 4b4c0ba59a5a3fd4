/** Debian's chromium (scripts/ensure-chromium.sh installs it; never a downloaded browser). */
export const CHROMIUM = '/usr/bin/chromium';

/**
 * playwright-core's `chromium.launch` options for every browser test: Debian's chromium, headless,
 * with the flags that keep it off the (closed) network (without them it floods it with refused
 * connections) and off /dev/shm (small in containers).
 */
export const CHROMIUM_LAUNCH_OPTIONS = {
  executablePath: CHROMIUM,
  headless: true,
  args: [
    '--no-sandbox',
    '--disable-gpu',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
    '--no-first-run',
    '--disable-dev-shm-usage',
  ],
} as const;
