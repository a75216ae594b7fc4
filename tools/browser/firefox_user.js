// The prefs of a Firefox ESR profile that runs the page (tests/e2e/firefox.sh, run_firefox.sh):
// WebGPU, in workers too, is behind prefs in Firefox ESR on Linux, and its blocklist would refuse
// the adapters it does not know (lavapipe among them); the rest keeps a first start quiet.
user_pref("dom.webgpu.enabled", true);
user_pref("dom.webgpu.workers.enabled", true);
user_pref("gfx.webgpu.ignore-blocklist", true);
user_pref("browser.shell.checkDefaultBrowser", false);
user_pref("datareporting.policy.dataSubmissionEnabled", false);
user_pref("toolkit.telemetry.reportingpolicy.firstRun", false);
